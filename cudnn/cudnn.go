// Package cudnn runs 2-D convolutions, pooling, batch normalization and
// fused scaled dot-product attention on gocuda's DeviceBuffers with
// NVIDIA's cuDNN 9, opened at run time like the driver: nothing is needed
// to build, and the library only where a Handle is made.
//
// A Tensor is a 4-D tensor of float32, cuda.Float16 or cuda.BFloat16 in
// device memory: its buffer, its Shape (N, C, H, W) and its Layout (NCHW,
// the zero value, or NHWC). A filter is a Tensor too, of shape (K, C/groups,
// R, S), in the layout of the tensors it is convolved with.
//
//	x := cudnn.Tensor[cuda.BFloat16]{Data: xb, Shape: cudnn.Shape{N: 32, C: 64, H: 56, W: 56}}
//	p := cudnn.Conv2D{PadH: 1, PadW: 1}
//	out, err := cudnn.ConvOutput(x.Shape, w.Shape, p) // {32, 64, 56, 56}
//	err = cudnn.ConvForward(h, y, x, w, p)           // y = x ⋆ w
//
// The operations take a Handle first (they are generic, and Go has no
// generic methods), their output before their inputs: ConvForward,
// ConvBackwardData and ConvBackwardFilter (a convolution's three passes,
// with padding, stride, dilation and groups), ConvBackwardBias (the bias's
// gradient), ConvBiasActivation (y = act(x ⋆ w + bias), ReLU or identity,
// fused by cuDNN), PoolForward and PoolBackward (max and average pooling)
// and the batch normalization of each channel:
// BatchNormInference, BatchNormTraining and BatchNormBackward (an
// output sharing memory with an input or with another output is refused
// with cuda.ErrInvalidValue: cuDNN runs none of them in place). Attention
// is softmax(Q·Kᵀ·scale)·V of 4-D AttentionTensors (batch, heads,
// positions, head dimension; any strides with the head dimension's 1),
// causal (aligned to the last keys) or not, grouped-query, through
// cuDNN's fused attention engine (the halves, sm_80 and later). The
// computations accumulate in float32 whatever the element type; the half
// types run on tensor cores, float32 too once Handle.SetTF32 allows it.
//
// The convolutions run through cuDNN's backend (graph) API, as PyTorch 2
// runs them: an operation graph of the convolution (ConvBiasActivation's:
// the convolution, a pointwise add of the bias and a ReLU, fused), and
// the execution plan of an engine configuration cuDNN's heuristics rank
// for it (CUDNN_HEUR_MODE_A, then the fallback list): the first that
// builds, or, after Handle.SetBenchmark(true), the fastest of the first
// 32 of both lists, each timed once per shape on the call's buffers
// (PyTorch's torch.backends.cudnn.benchmark). Engines whose numerics the call does
// not allow are passed over: those that convert the inputs down, and for
// float32 without SetTF32 the tensor cores'. Where cuDNN can build no
// plan for a shape, or the library lacks the backend API, the legacy calls
// run it (cudnnConvolutionForward and friends, their algorithm from
// cudnnGetConvolution*Algorithm_v7 or, timed,
// cudnnFindConvolution*Algorithm); EnvLegacy (GOCUDA_CUDNN_LEGACY=1) makes
// them run every shape. The Handle keeps the plan of each shape it has
// seen, and the variant pack of its last buffers, so that a call on the
// same buffers asks cuDNN for the execution alone.
//
// A Handle is made for one Stream and queues all its work there. The work
// area cuDNN asks for comes from stream-ordered memory, kept in the Handle
// and reused by later calls, grown when a call needs more, and freed by
// Close. A Handle is safe for use by many goroutines: its calls take turns.
// Make one per stream to run work side by side.
//
// The library is looked for as libcudnn.so.9 and libcudnn.so on the
// loader's path, in /usr/local/cuda, and in the folders of NVIDIA's Python
// wheels (nvidia/cudnn, as PyTorch installs it); GOCUDA_LIBCUDNN names
// another file. libcudnn.so.9 loads its sub-libraries (libcudnn_cnn,
// libcudnn_ops, ...) from its own folder when first needed, and they need
// cuBLAS, cuBLASLt and NVRTC: the package loads those before, from the
// wheels beside cuDNN's where it came from a wheel (the versions it was
// shipped with), else from the places above, where the loader's path
// lacks them. cuDNN 9 keeps the legacy calls this package makes besides
// the backend API (deprecated there); a function missing from the library
// opened fails only its own operations, with cuda.ErrNotSupported.
package cudnn

//go:generate go run ../internal/driver/gen -in ../internal/lib/cudnn/status.txt -backend lib-public -pkg cudnn -out zstatus.go

import (
	"path/filepath"
	"strings"
	"sync"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	clib "github.com/gocuda/cuda/internal/lib/cudnn"
)

// EnvLibrary is the environment variable that names the cuDNN library to
// open.
const EnvLibrary = "GOCUDA_LIBCUDNN"

// lib is cuDNN, opened once per process by the first call that needs it,
// with the functions of internal/lib/cudnn: a file that lacks one of the
// required ones is not cuDNN, and the others fail only their own calls.
// deps are the libraries cuDNN's sub-libraries load (cuBLASLt, cuBLAS,
// NVRTC), opened before those are (load) where they can be found, so that
// cuDNN's own dependencies are met from the same places (a library
// already loaded satisfies them); cuDNN works without them where the
// loader finds them itself.
var (
	lib = dl.Lazy{
		Library: dl.Library{
			Name:    "cuDNN",
			Env:     EnvLibrary,
			Sonames: []string{"libcudnn.so.9", "libcudnn.so"},
			DLLs:    []string{"cudnn64_9.dll"},
			Wheels:  []string{"cudnn/lib", "cu13/lib"},
			Install: "install cuDNN 9 (libcudnn9), or pip install nvidia-cudnn-cu12",
			Missing: cuda.ErrNotSupported,
		},
		Table: clib.Table,
	}
	deps = []*dl.Lazy{
		{Library: dl.Library{Name: "cuBLASLt", Sonames: []string{"libcublasLt.so.12", "libcublasLt.so.13"}, Wheels: []string{"cublas/lib", "cu13/lib"}}},
		{Library: dl.Library{Name: "cuBLAS", Sonames: []string{"libcublas.so.12", "libcublas.so.13"}, Wheels: []string{"cublas/lib", "cu13/lib"}}},
		{Library: dl.Library{Name: "NVRTC", Sonames: []string{"libnvrtc.so.12", "libnvrtc.so.13"}, Wheels: []string{"cuda_nvrtc/lib", "cu13/lib"}}},
	}
)

// load opens cuDNN once per process, then its dependencies (cuDNN 9's
// sub-libraries load lazily, at the first calls that need them): first
// from the wheels beside the cuDNN opened where it came from a wheel (the
// versions it was shipped with), else from the usual places. op's Error
// says why cuDNN could not be opened.
func load(op string) error {
	err := open(op)
	depsOnce.Do(func() {
		if err == nil {
			loadDeps(lib.Path())
		}
	})
	return err
}

var depsOnce sync.Once

// loadDeps loads each of deps, from the wheels of the site-packages that
// path (cuDNN's) lies in where it lies in one, else as its Lazy finds it.
// A dependency found nowhere is cuDNN's to report, if it needs it.
func loadDeps(path string) {
	site, _, inWheel := strings.Cut(filepath.ToSlash(path), "/nvidia/cudnn/")
	for _, d := range deps {
		loaded := false
		for _, w := range d.Library.Wheels {
			for _, so := range d.Library.Sonames {
				if !inWheel || loaded {
					continue
				}
				if _, err := dl.Load(filepath.Join(filepath.FromSlash(site), "nvidia", w, so)); err == nil {
					loaded = true
				}
			}
		}
		if !loaded {
			_ = d.Open()
		}
	}
}

// Library returns the path of the cuDNN library opened, or why none could
// be.
func Library() (string, error) {
	err := load("Library")
	return lib.Path(), err
}

// Version returns cuDNN's version, such as 9.1.0 (cudnnGetProperty: no
// handle, no context needed).
func Version() (cuda.Version, error) {
	const op = "Version"
	if err := load(op); err != nil {
		return cuda.Version{}, err
	}
	var v [3]int32 // libraryPropertyType: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
	for i := range v {
		if err := check(op, "cudnnGetProperty", clib.GetProperty(int32(i), &v[i])); err != nil {
			return cuda.Version{}, err
		}
	}
	return cuda.Version{Major: int(v[0]), Minor: int(v[1]), Patch: int(v[2])}, nil
}
