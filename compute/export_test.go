package compute

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"weak"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/kernelhook"
	"github.com/gocuda/cuda/nvrtc"
)

// Compiles returns how many kernels NVRTC compiled in this process.
func Compiles() int64 { return compiles.Load() }

// ElementwiseSource returns the source of k's variant for the pattern
// (true: the parameter is a buffer).
func ElementwiseSource(k *Elementwise, buffers ...bool) string { return k.source(buffers) }

// ReductionSource returns the source of r's variant for the pattern.
func ReductionSource(r *Reduction, buffers ...bool) string { return r.source(buffers) }

// ReadEntry and WriteEntry are the disk cache's.
var (
	ReadEntry  = readEntry
	WriteEntry = writeEntry
	EntryPath  = entryPath
)

// RawAdd returns the launch of Add's float32 kernel (its variant for three
// buffers) on x, x and x, through Function.Launch alone.
func RawAdd(s *cuda.Stream, x *cuda.DeviceBuffer[float32]) (func() error, error) {
	k, err := stdElementwise("add_float32", "float32 a, float32 b", "float32 y", binaryBodies["add"][1])
	if err != nil {
		return nil, err
	}
	pattern := []bool{true, true, true}
	v := &variant{src: k.source(pattern), width: k.vectorWidth(pattern)}
	f, err := function("RawAdd", s.Context(), v, k.name)
	if err != nil {
		return nil, err
	}
	cfg := elementwiseConfig(s, x.Len(), v.width) // as Add launches it
	return func() error { return f.Launch(cfg, x, x, x, int64(x.Len())) }, nil
}

// nvrtcCompiler is NVRTC, the compiler the package starts with.
var nvrtcCompiler = compiler

// standInVersion is the stand-in's "NVRTC version": part of every cache
// key, so that its images are never taken for NVRTC's.
var standInVersion = cuda.Version{Major: 0, Minor: 0, Patch: 1}

// UseStandIn puts the stand-in compiler in NVRTC's place until t ends, with
// the disk cache in a folder of t's: on the fake driver, which has no
// NVRTC, a generated source "compiles" to testdata/standin.ptx's entry of
// each of its kernels, which the fake runs in C, or to an empty entry that
// the fake loads but will not run (cuda.ErrNotSupported). A kernel whose
// generated signature is not the one standin.ptx records is refused: the
// fake's argument lists must follow the generator's.
func UseStandIn(t testing.TB) {
	t.Helper()
	compile, err := standIn()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvCache, t.TempDir())
	saved := compiler
	t.Cleanup(func() { compiler = saved })
	compiler.version = func() (cuda.Version, error) { return standInVersion, nil }
	compiler.compile = func(_ *cuda.Context, source string, _ nvrtc.Options) ([]byte, error) { return compile(source) }
	compiler.dir = cacheDir
}

// UseNVRTC puts NVRTC back in the compiler's place until t ends, for a
// test of what happens where NVRTC is missing (on the fake driver, the
// host compiler (internal/kernelhook) or the stand-in is there).
func UseNVRTC(t testing.TB) {
	saved, hook := compiler, kernelhook.Compile
	t.Cleanup(func() { compiler, kernelhook.Compile = saved, hook })
	compiler, kernelhook.Compile = nvrtcCompiler, nil
}

// HostCompiles reports whether the fake driver's tests compile kernels for
// the host and run them on the CPU (internal/cudatest sets
// internal/kernelhook's compiler where a C++ compiler is found).
func HostCompiles() bool { return kernelhook.Compile != nil }

// StandInOnFake puts the stand-in (UseStandIn) in NVRTC's place for the
// whole test binary wherever it runs against the fake driver without the
// host compiler (no C++ compiler found), so that the tests and the
// Examples, which cannot call UseStandIn, run there on the kernels the
// fake knows in C. TestMain calls it before cudatest picks the driver and
// the compiler, so each call decides then. On the fake the disk cache is
// off unless GOCUDA_KERNEL_CACHE names a folder; on a GPU, NVRTC and the
// disk cache are as they were.
func StandInOnFake() error {
	compile, err := standIn()
	if err != nil {
		return err
	}
	nv := compiler
	standIn := func() bool { return cudatest.IsFake() && kernelhook.Compile == nil }
	compiler.version = func() (cuda.Version, error) {
		if standIn() {
			return standInVersion, nil
		}
		return nv.version()
	}
	compiler.compile = func(ctx *cuda.Context, source string, opts nvrtc.Options) ([]byte, error) {
		if standIn() {
			return compile(source)
		}
		return nv.compile(ctx, source, opts)
	}
	compiler.dir = func() string {
		if standIn() && os.Getenv(EnvCache) == "" {
			return ""
		}
		return nv.dir()
	}
	return nil
}

// standIn returns the stand-in's compilation of a generated source, from
// testdata/standin.ptx.
func standIn() (func(source string) ([]byte, error), error) {
	data, err := os.ReadFile(filepath.Join("testdata", "standin.ptx"))
	if err != nil {
		return nil, err
	}
	text := string(data)
	return func(source string) ([]byte, error) {
		ptx := text[:strings.Index(text, "\n// source:")+1]
		for _, line := range strings.Split(source, "\n") {
			sig, ok := strings.CutPrefix(line, `extern "C" __global__ `)
			if !ok {
				continue
			}
			if strings.HasPrefix(sig, "__launch_bounds__(") {
				sig = sig[strings.IndexByte(sig, ')')+2:]
			}
			if sig, ok = strings.CutPrefix(sig, "void "); !ok {
				continue
			}
			name := sig[:strings.IndexByte(sig, '(')]
			at := strings.Index(text, "\n.visible .entry "+name+"(")
			if at < 0 {
				ptx += fmt.Sprintf("\n.visible .entry %s()\n{\n\tret;\n}\n", name)
				continue
			}
			if !strings.Contains(text, "// source: "+line+"\n") {
				return nil, fmt.Errorf("stand-in compiler: the generated signature of %s is not testdata/standin.ptx's:\n%s", name, line)
			}
			ptx += text[at : at+strings.Index(text[at:], "\n}\n")+3]
		}
		return []byte(ptx), nil
	}, nil
}

// ModulesKept returns how many modules the package keeps loaded in ctx,
// closed by Release or by ctx's Close.
func ModulesKept(ctx *cuda.Context) int {
	v, ok := modules.Load(weak.Make(ctx))
	if !ok {
		return 0
	}
	cm := v.(*contextModules)
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return len(cm.mods) + len(cm.unclosed)
}

// SetSoftmaxRoom makes n the shared memory a block of Softmax may keep its
// row in where its kernel opts in (the fake's device reports none) until
// t ends.
func SetSoftmaxRoom(t testing.TB, n int) {
	old := softmaxRoom
	softmaxRoom = func(deviceSize) int { return n }
	t.Cleanup(func() { softmaxRoom = old })
}

// SharedAllowed returns how many kernels the package has allowed more
// than 48 KiB of dynamic shared memory.
func SharedAllowed() int {
	n := 0
	sharedAllowed.Range(func(k, _ any) bool {
		if k.(weak.Pointer[cuda.Function]).Value() != nil {
			n++
		}
		return true
	})
	return n
}

// SetDeviceSize makes the layouts of s's device those of a device of sms
// multiprocessors of threads threads each, whose blocks may opt in to
// optin bytes of shared memory (the H200's: 132, 2048, 232448), until t
// ends: the fake's device then takes the GPU's layouts. Thread block
// clusters stay as the device has them.
func SetDeviceSize(t testing.TB, s *cuda.Stream, sms, threads, optin int) {
	t.Helper()
	real, err := sizeOf(s)
	if err != nil {
		t.Fatal(err)
	}
	dev := s.Context().Device().Ordinal()
	old, had := deviceSizes.Load(dev)
	deviceSizes.Store(dev, deviceSize{sms: sms, resident: sms * threads / blockSize, optin: optin, clusters: real.clusters})
	t.Cleanup(func() {
		if had {
			deviceSizes.Store(dev, old)
		} else {
			deviceSizes.Delete(dev)
		}
	})
}

// StagedSpan is the rows a block of Softmax's staged kernel (a thread a
// row) takes at a time, of rows of cols elements of size bytes.
func StagedSpan(cols, size int) int {
	span, _ := planStaged(1, cols, size)
	return span
}

// SetClusters makes Softmax of s's device take thread block clusters or
// not (the two kernels of a few long rows' chunks), until t ends.
func SetClusters(t testing.TB, s *cuda.Stream, on bool) {
	t.Helper()
	d, err := sizeOf(s)
	if err != nil {
		t.Fatal(err)
	}
	dev := s.Context().Device().Ordinal()
	old := d
	d.clusters = on
	deviceSizes.Store(dev, d)
	t.Cleanup(func() { deviceSizes.Store(dev, old) })
}

// ColumnKernel returns the kernel that SumAxis and its kin launch per
// column of rows×cols elements of size bytes on s's device ("_rows" for
// a single row or column, folded as the transposed shape's rows; else
// planCols' _narrow, _short, _cols or _colsv), with, for _cols and
// _colsv, the columns a thread takes (V), the rows it loads before it
// folds any (Unroll) and the chunks of rows.
func ColumnKernel(t testing.TB, s *cuda.Stream, rows, cols, size int) (kind string, vec, unroll, chunks int) {
	t.Helper()
	if rows == 1 || cols == 1 {
		return "_rows", 0, 0, 0
	}
	d, err := sizeOf(s)
	if err != nil {
		t.Fatal(err)
	}
	l := planCols(d, rows, cols, 16/size)
	if l.kind != "_cols" && l.kind != "_colsv" {
		return l.kind, 0, 0, l.chunks
	}
	_, vec, _ = colsKind(d, rows, cols, 16/size)
	return l.kind, vec, colsUnroll(vec, 16/size), l.chunks
}

// SoftmaxKernel returns the kernel Softmax launches for rows×cols
// elements of size bytes on s's device, where wide says that both
// buffers are aligned for 16-byte vectors: _regsN (N values a lane),
// _staged (a thread a row), "" with group 32 (gocuda_short) or 0 (a
// block a row), or _chunks for a few long rows cut into chunks.
func SoftmaxKernel(t testing.TB, s *cuda.Stream, rows, cols, size int, wide bool) (kind string, group int) {
	t.Helper()
	d, err := sizeOf(s)
	if err != nil {
		t.Fatal(err)
	}
	l := planRows(d, rows, cols, 16/size)
	vector := 16 / size
	wide = wide && cols%vector == 0
	switch {
	case l.chunks > 1:
		return "_chunks", 0
	case l.group > 1:
		if n := planRegs(cols, vector, valueSize(size), wide); n > 0 {
			if wide {
				n *= vector
			}
			return fmt.Sprintf("_regs%d", n), l.group
		}
	case l.group == 1:
		return "_staged", 1
	}
	return "", l.group
}
