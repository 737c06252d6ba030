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

// TestBackendCalls: the fake's backend API is as strict as cuDNN's about
// descriptors: an attribute of another descriptor type or element type
// is refused, nothing is set once finalized, a descriptor that names one
// not yet finalized does not finalize, a tensor needs every required
// attribute, and the engines come from the heuristics only.
func TestBackendCalls(t *testing.T) {
	lib, err := fakecuda.Lazy("cuDNN", Table)
	if err != nil {
		t.Skip("no C compiler for the fake driver:", err)
	}
	if err := lib.Open(); err != nil {
		t.Fatal(err)
	}
	const (
		tensorType, convType, engineType, opFwdType = 17, 1, 2, 10
		int64Type, dataType, descType, boolType     = 3, 1, 15, 2
	)
	var made []BackendDescriptor
	create := func(typ int32) BackendDescriptor {
		t.Helper()
		var d BackendDescriptor
		if r := BackendCreateDescriptor(typ, &d); r != Success {
			t.Fatalf("BackendCreateDescriptor(%d): %v", typ, r)
		}
		made = append(made, d)
		return d
	}
	defer func() {
		for _, d := range made {
			if r := BackendDestroyDescriptor(d); r != Success {
				t.Errorf("BackendDestroyDescriptor: %v", r)
			}
		}
	}()
	i64 := func(d BackendDescriptor, name int32, v ...int64) Result {
		return BackendSetAttribute(d, name, int64Type, int64(len(v)), unsafe.Pointer(&v[0]))
	}
	tensor := func(uid int64, finalize bool) BackendDescriptor {
		d := create(tensorType)
		dt := int32(0)
		for _, r := range []Result{
			BackendSetAttribute(d, 901, dataType, 1, unsafe.Pointer(&dt)),
			i64(d, 902, 1, 2, 3, 3), i64(d, 903, 18, 9, 3, 1), i64(d, 906, uid), i64(d, 900, 16),
		} {
			if r != Success {
				t.Fatalf("setting a tensor's attributes: %v", r)
			}
		}
		if finalize {
			if r := BackendFinalize(d); r != Success {
				t.Fatalf("finalizing a tensor: %v", r)
			}
		}
		return d
	}
	x := tensor(1, true)
	bare := create(tensorType)
	unfinished := tensor(2, false)
	op := create(opFwdType)
	v := true
	for _, tt := range []struct {
		name string
		r    Result
		want Result
	}{
		{"a tensor's dimensions as a data type", BackendSetAttribute(bare, 902, dataType, 1, unsafe.Pointer(&v)), BadParamAttributeType},
		{"a convolution's attribute on a tensor", i64(bare, 106, 2), BadParam},
		{"an attribute of a finalized tensor", BackendSetAttribute(x, 907, boolType, 1, unsafe.Pointer(&v)), BadParam},
		{"a tensor without its attributes", BackendFinalize(bare), BadParam},
		{"a tensor finalized twice", BackendFinalize(x), BadParam},
		{"an engine made by hand", BackendFinalize(create(engineType)), BadParam},
		{"an attribute read before finalizing", BackendGetAttribute(unfinished, 902, int64Type, 1, new(int64), unsafe.Pointer(new(int64))), BadParamNotFinalized},
		{"no descriptor", BackendFinalize(0), BadParam},
		{"descriptor type 99", BackendCreateDescriptor(99, new(BackendDescriptor)), BadParam},
	} {
		if tt.r != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, tt.r, tt.want)
		}
	}
	// An operation naming a tensor not finalized does not finalize.
	conv := create(convType)
	mode, ct := int32(1), int32(0)
	for _, r := range []Result{
		BackendSetAttribute(conv, 100, dataType, 1, unsafe.Pointer(&ct)), BackendSetAttribute(conv, 101, 7, 1, unsafe.Pointer(&mode)),
		i64(conv, 106, 2), i64(conv, 102, 1, 1), i64(conv, 103, 1, 1), i64(conv, 104, 0, 0), i64(conv, 105, 0, 0), BackendFinalize(conv),
	} {
		if r != Success {
			t.Fatalf("making a convolution descriptor: %v", r)
		}
	}
	one := float32(1)
	for _, r := range []Result{
		BackendSetAttribute(op, 702, descType, 1, unsafe.Pointer(&conv)), BackendSetAttribute(op, 703, descType, 1, unsafe.Pointer(&unfinished)),
		BackendSetAttribute(op, 704, descType, 1, unsafe.Pointer(&x)), BackendSetAttribute(op, 705, descType, 1, unsafe.Pointer(&x)),
		BackendSetAttribute(op, 700, 4, 1, unsafe.Pointer(&one)), BackendSetAttribute(op, 701, 4, 1, unsafe.Pointer(&one)),
	} {
		if r != Success {
			t.Fatalf("setting the operation's attributes: %v", r)
		}
	}
	if r := BackendFinalize(op); r != BadParamNotFinalized {
		t.Errorf("an operation naming a tensor not finalized: %v, want %v", r, BadParamNotFinalized)
	}
}
