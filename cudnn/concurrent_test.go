package cudnn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/cudnn"
)

// TestConcurrentMixed: goroutines sharing a Handle, each with its own
// case of convCases, type, layout and pass, while another flips
// SetBenchmark and SetTF32: every plan is made once per key, and each
// result is the Go reference's (run under -race), to TF32's precision for
// float32, since a pass may run while TF32 is allowed.
func TestConcurrentMixed(t *testing.T) {
	ctx, s, h := handle(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := h.SetBenchmark(i%2 == 0); err != nil {
				t.Error(err)
				return
			}
			if err := h.SetTF32(i%3 == 0); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var jobs []mixedJob
	for i, c := range convCases {
		l := layouts[i%2]
		if i%2 == 0 {
			jobs = append(jobs, convJob[float32](t, ctx, h, c, l, i))
		} else {
			jobs = append(jobs, convJob[cuda.Float16](t, ctx, h, c, l, i))
		}
	}
	errs := make([]error, len(jobs))
	var run sync.WaitGroup
	for i, j := range jobs {
		run.Add(1)
		go func() {
			defer run.Done()
			for range 5 {
				if err := j.run(); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	run.Wait()
	close(stop)
	wg.Wait()
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			j.check(t)
		})
	}
}

// mixedJob is a call of TestConcurrentMixed's, and the check of its
// result once all have run.
type mixedJob struct {
	name  string
	run   func() error
	check func(t *testing.T)
}

// convJob is case c's forward pass (i even) or backward data pass (i
// odd), in layout l, to run and to check.
func convJob[T cudnn.Element](t *testing.T, ctx *cuda.Context, h *cudnn.Handle, c convCase, l cudnn.Layout, i int) mixedJob {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(i), 5))
	ys := must(cudnn.ConvOutput(c.x, c.w, c.p))(t)
	xt, xf := random[T](r, c.x.Len())
	wt, wf := random[T](r, c.w.Len())
	dyt, dyf := random[T](r, ys.Len())
	x, w, dy := tensor(t, ctx, c.x, l, xt), tensor(t, ctx, c.w, l, wt), tensor(t, ctx, ys, l, dyt)
	y, dx := empty[T](t, ctx, ys, l), empty[T](t, ctx, c.x, l)
	name := fmt.Sprintf("%s %v %T", c.name, l, *new(T))
	if i%2 == 0 {
		return mixedJob{name + " forward", func() error { return cudnn.ConvForward(h, y, x, w, c.p) }, func(t *testing.T) {
			want, scale := make([]float64, ys.Len()), make([]float64, ys.Len())
			eachTerm(c.x, c.w, ys, l, c.p, func(xi, wi, yi int) {
				want[yi] += xf[xi] * wf[wi]
				scale[yi] += math.Abs(xf[xi] * wf[wi])
			})
			near(t, "y", download(t, y), want, scale, mixedTol[T]())
		}}
	}
	return mixedJob{name + " backward data", func() error { return cudnn.ConvBackwardData(h, dx, dy, w, c.p) }, func(t *testing.T) {
		want, scale := make([]float64, c.x.Len()), make([]float64, c.x.Len())
		eachTerm(c.x, c.w, ys, l, c.p, func(xi, wi, yi int) {
			want[xi] += dyf[yi] * wf[wi]
			scale[xi] += math.Abs(dyf[yi] * wf[wi])
		})
		near(t, "dx", download(t, dx), want, scale, mixedTol[T]())
	}}
}

// mixedTol is tol, or TF32's for float32: SetTF32 flips while the passes
// run, and TF32 keeps 10 bits of mantissa.
func mixedTol[T cudnn.Element]() float64 {
	if _, ok := any(*new(T)).(float32); ok {
		return 2e-3
	}
	return tol[T]()
}
