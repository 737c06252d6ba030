package cusolver_test

import (
	"testing"
	"unsafe"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/fakecuda"
	clib "github.com/gocuda/cuda/internal/lib/cusolver"
)

func TestMain(m *testing.M) { cudatest.MainSkipFake(m, "") }

// TestFakeChecks: the fake answers as strictly as cuSOLVER: a workspace
// smaller than it reported (the 64-bit API's bytes, the legacy API's
// elements; a complex matrix's twice a real one's), a bad fill mode, a
// complex type where it computes real matrices only, a handle destroyed. Only on the fake: it checks the fake itself.
func TestFakeChecks(t *testing.T) {
	if !cudatest.IsFake() {
		t.Skip("checks the fake driver's cuSOLVER")
	}
	lib, err := fakecuda.Lazy("cuSOLVER", clib.Table)
	if err != nil {
		t.Fatal(err)
	}
	if err := lib.Open(); err != nil {
		t.Fatal(err)
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	a := cudatest.Must(cuda.FromHost(ctx, []float64{4, 1, 1, 3}))(t)
	defer a.Free()
	info := cudatest.Must(cuda.Alloc[int32](ctx, 1))(t)
	defer info.Free()
	work := cudatest.Must(cuda.Alloc[byte](ctx, 4096))(t)
	defer work.Free()
	ap, ip, wp := uintptr(a.Ptr()), uintptr(info.Ptr()), uintptr(work.Ptr())
	err = s.Do(func(stream uintptr) error {
		var h clib.Handle
		if r := clib.DnCreate(&h); r != clib.Success {
			t.Fatalf("DnCreate = %v", r)
		}
		if r := clib.DnSetStream(h, stream); r != clib.Success {
			t.Fatalf("DnSetStream = %v", r)
		}
		var p clib.Params
		if r := clib.DnCreateParams(&p); r != clib.Success {
			t.Fatalf("DnCreateParams = %v", r)
		}
		defer clib.DnDestroyParams(p)
		const f64, c64 = 1, 5
		var dev, host uintptr
		if r := clib.DnXgetrf_bufferSize(h, p, 2, 2, f64, ap, 2, f64, &dev, &host); r != clib.Success || dev == 0 || dev > 4096 {
			t.Fatalf("DnXgetrf_bufferSize = %v, %d bytes", r, dev)
		}
		for _, c := range []struct {
			name string
			r    clib.Result
			want clib.Result
		}{
			{"getrf, a byte short", clib.DnXgetrf(h, p, 2, 2, f64, ap, 2, 0, f64, wp, dev-1, nil, 0, ip), clib.InvalidWorkspace},
			{"getrf, complex, its workspace short", clib.DnXgetrf(h, p, 2, 2, c64, ap, 2, 0, c64, wp, dev, nil, 0, ip), clib.InvalidWorkspace},
			{"geqrf, complex, its workspace short", clib.DnXgeqrf(h, p, 2, 2, c64, ap, 2, c64, wp+2048, c64, wp, 63, nil, 0, ip), clib.InvalidWorkspace},
			{"geqrf, tau of another type", clib.DnXgeqrf(h, p, 2, 2, c64, ap, 2, f64, wp+2048, c64, wp, 4096, nil, 0, ip), clib.InvalidValue},
			{"syevd, complex, w complex (not real)", clib.DnXsyevd(h, p, 1, 0, 2, c64, ap, 2, c64, wp+2048, c64, wp, 4096, nil, 0, ip), clib.InvalidValue},
			{"gesvd, complex, s complex (not real)", clib.DnXgesvd(h, p, 'N', 'N', 2, 2, c64, ap, 2, c64, wp+2048, c64, 0, 2, c64, 0, 2, c64, wp, 4096, nil, 0, ip), clib.InvalidValue},
			{"unmqr, trans T (N or C)", clib.DnZunmqr(h, 0, 1, 2, 2, 2, ap, 2, wp+2048, ap, 2, wp, 4096, ip), clib.InvalidValue},
			{"ormqr, trans C (N or T)", clib.DnDormqr(h, 0, 2, 2, 2, 2, ap, 2, wp+2048, ap, 2, wp, 4096, ip), clib.InvalidValue},
			{"getrf, data and compute types differ", clib.DnXgetrf(h, p, 2, 2, f64, ap, 2, 0, c64, wp, dev, nil, 0, ip), clib.InvalidValue},
			{"getrf, lda short", clib.DnXgetrf(h, p, 2, 2, f64, ap, 1, 0, f64, wp, dev, nil, 0, ip), clib.InvalidValue},
			{"getrf, no params", clib.DnXgetrf(h, 0, 2, 2, f64, ap, 2, 0, f64, wp, dev, nil, 0, ip), clib.InvalidValue},
			{"potrf, bad fill mode", clib.DnXpotrf(h, p, 2, 2, f64, ap, 2, f64, wp, dev, nil, 0, ip), clib.InvalidValue},
			{"potrf, memory outside every allocation", clib.DnXpotrf(h, p, 0, 2, f64, 8, 2, f64, wp, 4096, nil, 0, ip), clib.ExecutionFailed},
		} {
			if c.r != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.r, c.want)
			}
		}
		var lw int32
		if r := clib.DnDpotri_bufferSize(h, 0, 2, ap, 2, &lw); r != clib.Success || lw <= 0 {
			t.Fatalf("DnDpotri_bufferSize = %v, %d", r, lw)
		}
		if r := clib.DnDpotri(h, 0, 2, ap, 2, wp, lw-1, ip); r != clib.InvalidValue {
			t.Errorf("potri with lwork one short = %v, want %v", r, clib.InvalidValue)
		}
		// The complex batches and least squares: checked as the real ones,
		// a complex workspace larger than a real one's.
		if r := clib.DnZpotrfBatched(h, 2, 2, wp, 2, ip, 1); r != clib.InvalidValue {
			t.Errorf("Zpotrf batched, bad fill mode = %v, want %v", r, clib.InvalidValue)
		}
		var jobs int32
		if r := clib.DnCheevjBatched_bufferSize(h, 1, 0, 2, ap, 2, wp, &jobs, 0, 1); r != clib.InvalidValue {
			t.Errorf("Cheevj batched without its syevjInfo = %v, want %v", r, clib.InvalidValue)
		}
		var rsize, csize uintptr
		if r := clib.DnSSgels_bufferSize(h, 2, 2, 1, ap, 2, ap, 2, ap, 2, 0, &rsize); r != clib.Success {
			t.Fatalf("DnSSgels_bufferSize = %v", r)
		}
		if r := clib.DnCCgels_bufferSize(h, 2, 2, 1, ap, 2, ap, 2, ap, 2, 0, &csize); r != clib.Success || csize <= rsize {
			t.Fatalf("DnCCgels_bufferSize = %v, %d bytes: want more than SSgels' %d", r, csize, rsize)
		}
		var iter int32
		if r := clib.DnCCgels(h, 2, 2, 1, ap, 2, ap, 2, ap, 2, wp, csize-1, &iter, ip); r != clib.InvalidWorkspace {
			t.Errorf("CCgels with its workspace a byte short = %v, want %v", r, clib.InvalidWorkspace)
		}
		if r := clib.DnZZgels(h, 2, 1, 1, ap, 1, ap, 2, ap, 1, wp, 4096, &iter, ip); r != clib.InvalidValue {
			t.Errorf("ZZgels with lda short = %v, want %v", r, clib.InvalidValue)
		}
		// gesvd and syevd ask for a host workspace: none is refused.
		if r := clib.DnXsyevd_bufferSize(h, p, 1, 0, 2, f64, ap, 2, f64, wp, f64, &dev, &host); r != clib.Success || host == 0 {
			t.Fatalf("DnXsyevd_bufferSize = %v, host %d bytes", r, host)
		}
		if r := clib.DnXsyevd(h, p, 1, 0, 2, f64, ap, 2, f64, wp+2048, f64, wp, dev, nil, 0, ip); r != clib.InvalidWorkspace {
			t.Errorf("syevd without its host workspace = %v, want %v", r, clib.InvalidWorkspace)
		}
		hostWS := make([]byte, host)
		if r := clib.DnXsyevd(h, p, 1, 0, 2, f64, ap, 2, f64, wp+2048, f64, wp, dev, unsafe.Pointer(&hostWS[0]), host, ip); r != clib.Success {
			t.Errorf("syevd with its workspaces = %v", r)
		}
		if r := clib.DnDestroy(h); r != clib.Success {
			t.Fatalf("DnDestroy = %v", r)
		}
		if r := clib.DnXgetrf(h, p, 2, 2, f64, ap, 2, 0, f64, wp, dev, nil, 0, ip); r != clib.NotInitialized {
			t.Errorf("getrf on a destroyed handle = %v, want %v", r, clib.NotInitialized)
		}
		return nil
	}, a, info, work)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
}
