package nvrtc

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/fakecuda"
)

// TestSignatures checks each generated function against its prototype in
// nvrtc.h, written out here by hand as the Go types of its parameters: the
// fake driver has no NVRTC, so nothing else here would notice a parameter
// missing, added or swapped before a GPU machine does.
func TestSignatures(t *testing.T) {
	var (
		program  = reflect.TypeFor[Program]()
		programP = reflect.TypeFor[*Program]()
		str      = reflect.TypeFor[*byte]()  // const char *, char *
		strs     = reflect.TypeFor[**byte]() // const char * const *, const char **
		cint     = reflect.TypeFor[int32]()
		intP     = reflect.TypeFor[*int32]()
		sizeP    = reflect.TypeFor[*uintptr]()
		result   = reflect.TypeFor[Result]()
	)
	for _, tt := range []struct {
		name   string // the C function
		fn     any
		params []reflect.Type
	}{
		// const char *nvrtcGetErrorString(nvrtcResult result);
		{"nvrtcGetErrorString", GetErrorString, []reflect.Type{result}},
		// nvrtcResult nvrtcVersion(int *major, int *minor);
		{"nvrtcVersion", Version, []reflect.Type{intP, intP}},
		// nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name,
		//     int numHeaders, const char * const *headers, const char * const *includeNames);
		{"nvrtcCreateProgram", CreateProgram, []reflect.Type{programP, str, str, cint, strs, strs}},
		// nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog);
		{"nvrtcDestroyProgram", DestroyProgram, []reflect.Type{programP}},
		// nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int numOptions, const char * const *options);
		{"nvrtcCompileProgram", CompileProgram, []reflect.Type{program, cint, strs}},
		// nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *ptxSizeRet);
		{"nvrtcGetPTXSize", GetPTXSize, []reflect.Type{program, sizeP}},
		// nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *ptx);
		{"nvrtcGetPTX", GetPTX, []reflect.Type{program, str}},
		// nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *cubinSizeRet);
		{"nvrtcGetCUBINSize", GetCUBINSize, []reflect.Type{program, sizeP}},
		// nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *cubin);
		{"nvrtcGetCUBIN", GetCUBIN, []reflect.Type{program, str}},
		// nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *logSizeRet);
		{"nvrtcGetProgramLogSize", GetProgramLogSize, []reflect.Type{program, sizeP}},
		// nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log);
		{"nvrtcGetProgramLog", GetProgramLog, []reflect.Type{program, str}},
		// nvrtcResult nvrtcAddNameExpression(nvrtcProgram prog, const char * const name_expression);
		{"nvrtcAddNameExpression", AddNameExpression, []reflect.Type{program, str}},
		// nvrtcResult nvrtcGetLoweredName(nvrtcProgram prog, const char *const name_expression, const char **lowered_name);
		{"nvrtcGetLoweredName", GetLoweredName, []reflect.Type{program, str, strs}},
	} {
		ft := reflect.TypeOf(tt.fn)
		var got []reflect.Type
		for i := range ft.NumIn() {
			got = append(got, ft.In(i))
		}
		if !reflect.DeepEqual(got, tt.params) {
			t.Errorf("%s takes %v, want %v as nvrtc.h declares", tt.name, got, tt.params)
		}
		want := []reflect.Type{result}
		if tt.name == "nvrtcGetErrorString" {
			want = []reflect.Type{reflect.TypeFor[string](), reflect.TypeFor[bool]()}
		}
		var outs []reflect.Type
		for i := range ft.NumOut() {
			outs = append(outs, ft.Out(i))
		}
		if !reflect.DeepEqual(outs, want) {
			t.Errorf("%s returns %v, want %v", tt.name, outs, want)
		}
	}
	if n := len(Table.Symbols); n != 13 {
		t.Errorf("Table has %d functions, the table above 13", n)
	}
}

// TestCalls: before the library is opened every function is missing; a
// library without NVRTC's required functions (the fake driver, which has
// none of them) does not open, and leaves them missing.
func TestCalls(t *testing.T) {
	var major, minor int32
	if r := Version(&major, &minor); r != Missing {
		t.Fatalf("Version before the library is opened = %v, want Missing", r)
	}
	if s, ok := GetErrorString(CompilationError); ok || s != "" {
		t.Fatalf("GetErrorString before the library is opened = %q, %v; want \"\", false", s, ok)
	}
	for _, tt := range []struct {
		r    Result
		want string
	}{{Success, "NVRTC_SUCCESS"}, {CompilationError, "NVRTC_ERROR_COMPILATION"}, {Result(99), "nvrtcResult(99)"}, {Missing, "nvrtcResult(missing function)"}} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("Result(%d).String() = %q, want %q", int32(tt.r), got, tt.want)
		}
	}
	lib, err := fakecuda.Lazy("NVRTC", Table)
	if err != nil {
		t.Skip("no C compiler for the fake driver:", err)
	}
	err = lib.Open()
	if err == nil || !strings.Contains(err.Error(), "is not NVRTC: it lacks nvrtcGetErrorString, nvrtcVersion, nvrtcCreateProgram") {
		t.Fatalf("opening the fake driver as NVRTC: %v; want it to name the required functions it lacks", err)
	}
	if r := Version(&major, &minor); r != Missing {
		t.Errorf("Version after a failed open = %v, want Missing", r)
	}
}
