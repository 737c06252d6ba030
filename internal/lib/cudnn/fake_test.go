package cudnn

import (
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/internal/fakecuda"
)

// TestCalls: before the library is opened every function is missing;
// opened (the fake driver answers cuDNN's calls), they reach it with their
// arguments where C reads them, the perf structs laid out as cuDNN's.
func TestCalls(t *testing.T) {
	var v int32
	if r := GetProperty(0, &v); r != Missing {
		t.Fatalf("GetProperty before the library is opened = %v, want Missing", r)
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{{Success, "CUDNN_STATUS_SUCCESS"}, {BadParam, "CUDNN_STATUS_BAD_PARAM"}, {Result(77), "cudnnStatus(77)"}} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Result(%d).String() = %q, want %q", int32(tt.r), got, tt.want)
		}
	}
	if n := unsafe.Sizeof(FwdAlgoPerf{}); n != 48 {
		t.Errorf("FwdAlgoPerf is %d bytes: cuDNN's cudnnConvolutionFwdAlgoPerf_t is 48", n)
	}
	lib, err := fakecuda.Lazy("cuDNN", Table)
	if err != nil {
		t.Skip("no C compiler for the fake driver:", err)
	}
	if err := lib.Open(); err != nil {
		t.Fatal(err)
	}
	if r := GetProperty(0, &v); r != Success || v != 9 {
		t.Errorf("GetProperty(major) = %v, %d: want success and the fake's 9", r, v)
	}
	if s, ok := GetErrorString(BadParam); !ok || s != "CUDNN_STATUS_BAD_PARAM" {
		t.Errorf("GetErrorString(BadParam) = %q, %v", s, ok)
	}
	// Descriptors hold what they were set to: the output of a 7x7
	// convolution with stride 2 and padding 3 (a double argument, the
	// activation's coefficient, goes in its register).
	var x, y TensorDescriptor
	var w FilterDescriptor
	var c ConvolutionDescriptor
	var a ActivationDescriptor
	for _, r := range []Result{CreateTensorDescriptor(&x), CreateTensorDescriptor(&y), CreateFilterDescriptor(&w), CreateConvolutionDescriptor(&c), CreateActivationDescriptor(&a),
		SetTensor4dDescriptor(x, 1, 9, 32, 3, 224, 224), SetFilter4dDescriptor(w, 9, 1, 64, 3, 7, 7), SetConvolution2dDescriptor(c, 3, 3, 2, 2, 1, 1, 1, 0),
		SetActivationDescriptor(a, 1, 0, 0.5)} {
		if r != Success {
			t.Fatalf("making the descriptors: %v", r)
		}
	}
	var n, ch, h, wd int32
	if r := GetConvolution2dForwardOutputDim(c, x, w, &n, &ch, &h, &wd); r != Success || n != 32 || ch != 64 || h != 112 || wd != 112 {
		t.Errorf("GetConvolution2dForwardOutputDim = %v, %d×%d×%d×%d", r, n, ch, h, wd)
	}
	// Bad values are refused; a handle that is not one is a bad parameter.
	for _, tt := range []struct {
		name string
		r    Result
		want Result
	}{
		{"a tensor of 0 images", SetTensor4dDescriptor(y, 0, 0, 0, 3, 5, 5), BadParam},
		{"int8 tensors", SetTensor4dDescriptor(y, 0, 3, 1, 3, 5, 5), NotSupportedDataType},
		{"stride 0", SetConvolution2dDescriptor(c, 0, 0, 0, 1, 1, 1, 1, 0), BadParam},
		{"0 groups", SetConvolutionGroupCount(c, 0), BadParam},
		{"activation 9", SetActivationDescriptor(a, 9, 0, 0), BadParam},
		{"no handle", SetStream(0, 0), BadParam},
		{"forward without a handle", ConvolutionForward(0, nil, x, 0, w, 0, c, 0, 0, 0, nil, y, 0), BadParam},
	} {
		if tt.r != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.r, tt.want)
		}
	}
	for _, r := range []Result{DestroyTensorDescriptor(x), DestroyTensorDescriptor(y), DestroyFilterDescriptor(w), DestroyConvolutionDescriptor(c), DestroyActivationDescriptor(a)} {
		if r != Success {
			t.Errorf("destroying a descriptor: %v", r)
		}
	}
}
