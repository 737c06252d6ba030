package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const libHeader = "status fooStatus_t Result\nlibrary Table foo\n"

// fooTypes adds the handles of the tests' library foo to libTypes for the
// test.
func fooTypes(t *testing.T) {
	t.Helper()
	for c, lt := range map[string]libType{"fooHandle_t": {goType: "Handle", under: "uintptr"}, "fooLtHandle_t": {goType: "LtHandle", under: "uintptr"}} {
		libTypes[c] = lt
		t.Cleanup(func() { delete(libTypes, c) })
	}
}

func TestParseLibProtos(t *testing.T) {
	fooTypes(t)
	f, err := parseLibProtos(strings.NewReader(`# a comment
status fooStatus_t Result
library Table foo
fooStatus_t fooCreate_v2(fooHandle_t *handle); // required
fooStatus_t fooRun(fooHandle_t h, const float *x /*device*/, void *host, size_t n, long long type, double alpha, int rng_type);
const char *fooGetErrorString(fooStatus_t status);
void fooNothing(void);
size_t fooGetVersion();
library LtTable fooLt Lt
fooStatus_t fooLtCreate(fooLtHandle_t *handle, const char * const *names, unsigned long long seed, int _);
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tables) != 2 || len(f.Tables[0].Funcs) != 5 || len(f.Tables[1].Funcs) != 1 {
		t.Fatalf("parsed %+v", f)
	}
	funcs := append(append([]libFunc(nil), f.Tables[0].Funcs...), f.Tables[1].Funcs...)
	for _, tt := range []struct {
		name    string
		fn, arg int
		goName  string
		goType  string
		passed  string
		isFloat bool
	}{
		{"handle out-pointer", 0, 0, "handle", "*Handle", "uintptr(unsafe.Pointer(handle))", false},
		{"handle by value", 1, 0, "h", "Handle", "uintptr(h)", false},
		{"device pointer", 1, 1, "x", "uintptr", "x", false},
		{"host void pointer", 1, 2, "host", "unsafe.Pointer", "uintptr(host)", false},
		{"size_t", 1, 3, "n", "uintptr", "n", false},
		{"long long, a keyword's name", 1, 4, "typeArg", "int64", "uintptr(typeArg)", false},
		{"double by value", 1, 5, "alpha", "float64", "uintptr(alpha)", true},
		{"snake case", 1, 6, "rngType", "int32", "uintptr(rngType)", false},
		{"status by value", 2, 0, "status", "Result", "uintptr(status)", false},
		{"const char * const *", 5, 1, "names", "**byte", "uintptr(unsafe.Pointer(names))", false},
		{"unsigned long long", 5, 2, "seed", "uint64", "uintptr(seed)", false},
		{"underscores alone", 5, 3, "arg", "int32", "uintptr(arg)", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := funcs[tt.fn].Params[tt.arg]
			if p.Name != tt.goName || p.GoType != tt.goType || p.Arg != tt.passed || p.Float != tt.isFloat {
				t.Errorf("parsed as %+v, want %s %s passed as %s, float %v", p, tt.goName, tt.goType, tt.passed, tt.isFloat)
			}
		})
	}
	for _, tt := range []struct {
		fn       int
		goName   string
		ret      libReturn
		required bool
		floats   bool
		params   int
	}{
		{0, "Create", libReturn{Status: true}, true, false, 1},
		{1, "Run", libReturn{Status: true}, false, true, 7},
		{2, "GetErrorString", libReturn{GoType: "string", Conv: "dl.String(%s)"}, false, false, 1},
		{3, "Nothing", libReturn{}, false, false, 0},
		{4, "GetVersion", libReturn{GoType: "uintptr", Conv: "uintptr(%s)"}, false, false, 0},
		{5, "LtCreate", libReturn{Status: true}, false, false, 4},
	} {
		fn := funcs[tt.fn]
		if fn.GoName != tt.goName || fn.Return != tt.ret || fn.Required != tt.required || fn.Floats != tt.floats || len(fn.Params) != tt.params {
			t.Errorf("%s parsed as %s returning %+v (required %v, floats %v, %d parameters), want %s, %+v, %v, %v, %d",
				fn.CName, fn.GoName, fn.Return, fn.Required, fn.Floats, len(fn.Params), tt.goName, tt.ret, tt.required, tt.floats, tt.params)
		}
	}
	if t0, t1 := f.Tables[0], f.Tables[1]; t0.Var != "Table" || t0.CPrefix != "foo" || t0.GoPrefix != "" || t1.Var != "LtTable" || t1.CPrefix != "fooLt" || t1.GoPrefix != "Lt" {
		t.Errorf("library lines parsed as %+v and %+v", t0, t1)
	}
	if want := []libNamed{{"fooHandle_t", "Handle", "uintptr"}, {"fooLtHandle_t", "LtHandle", "uintptr"}}; len(f.Named) != 2 || f.Named[0] != want[0] || f.Named[1] != want[1] {
		t.Errorf("named types %+v, want %+v", f.Named, want)
	}
}

func TestParseLibProtosErrors(t *testing.T) {
	fooTypes(t)
	for _, tt := range []struct{ name, text, want string }{
		{"bad line", libHeader + "fooStatus_t fooRun(int x)", "not a C prototype"},
		{"unknown type", libHeader + "fooStatus_t fooRun(struct weird x);", `unknown C type "struct weird"`},
		{"unknown return type", libHeader + "fooResult fooRun(int x);", `unknown C type "fooResult"`},
		{"float return", libHeader + "float fooRun(int x);", "unsupported return type"},
		{"before the library line", "status fooStatus_t Result\nfooStatus_t fooRun(int x);", "before the status and library lines"},
		{"no status line", "library Table foo\nfooStatus_t fooRun(int x);", "before the status and library lines"},
		{"another prefix", libHeader + "fooStatus_t barRun(int x);", "does not start with the library's prefix foo"},
		{"unknown annotation", libHeader + "fooStatus_t fooRun(int *x /*in*/);", "unknown annotation"},
		{"device value", libHeader + "fooStatus_t fooRun(int x /*device*/);", "/*device*/ marks a pointer"},
		{"structure by value", libHeader + "fooStatus_t fooRun(cufftComplex x);", "not passed by value"},
		{"void by value", libHeader + "fooStatus_t fooRun(void x);", "not passed by value"},
		{"triple pointer", libHeader + "fooStatus_t fooRun(int ***x);", "more than two levels"},
		{"no parameter name", libHeader + "fooStatus_t fooRun(int);", "cannot parse parameter"},
		{"same Go name", libHeader + "fooStatus_t fooRun(int x);\nfooStatus_t fooRun_v2(int x);", "both Run"},
		{"too many parameters", libHeader + "fooStatus_t fooRun(" + strings.Repeat("int x, ", 32) + "int y);", "more than purego's 32"},
		{"bad library line", "status fooStatus_t Result\nlibrary table", "want library"},
		{"two status lines", "status a A\nstatus b B", "want one line status"},
		{"empty", "# nothing", "no library line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseLibProtos(strings.NewReader(tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseLibProtos(%q) = %v, want an error saying %q", tt.text, err, tt.want)
			}
		})
	}
}

func TestParseLibStatus(t *testing.T) {
	s, err := parseLibStatus(strings.NewReader(`# codes
status fooStatus_t Result fooStatus
FOO_SUCCESS 0 Success
FOO_BAD     7 Bad
`))
	if err != nil {
		t.Fatal(err)
	}
	if s.CType != "fooStatus_t" || s.GoType != "Result" || s.Unknown != "fooStatus" || len(s.Codes) != 2 || s.Codes[1] != (libCode{"FOO_BAD", 7, "Bad"}) {
		t.Errorf("parsed %+v", s)
	}
	for _, tt := range []struct{ name, text string }{
		{"code before status", "FOO_SUCCESS 0 Success"},
		{"short status line", "status fooStatus_t Result"},
		{"short code line", "status fooStatus_t Result foo\nFOO_SUCCESS 0"},
		{"bad value", "status fooStatus_t Result foo\nFOO_SUCCESS zero Success"},
		{"repeated value", "status fooStatus_t Result foo\nA 1 A\nB 1 B"},
		{"repeated name", "status fooStatus_t Result foo\nA 1 A\nB 2 A"},
		{"Missing taken", "status fooStatus_t Result foo\nA 1 Missing"},
		{"unexported", "status fooStatus_t Result foo\nA 1 a"},
		{"no codes", "status fooStatus_t Result foo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseLibStatus(strings.NewReader(tt.text)); err == nil {
				t.Errorf("parseLibStatus(%q) succeeded", tt.text)
			}
		})
	}
}

// TestGenerateLib: the library backends over each internal/lib package's
// tables give the files committed there, as go generate would.
func TestGenerateLib(t *testing.T) {
	dirs, err := filepath.Glob("../../lib/*/prototypes.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, protos := range dirs {
		dir := filepath.Dir(protos)
		pkg := filepath.Base(dir)
		for _, tt := range []struct{ in, backend, out string }{
			{"prototypes.txt", "lib", "zcalls.go"},
			{"status.txt", "lib-status", "zstatus.go"},
		} {
			t.Run(pkg+"_"+tt.backend, func(t *testing.T) {
				command := "internal/driver/gen -in " + tt.in + " -backend " + tt.backend + " -pkg " + pkg + " -out " + tt.out
				got, err := generate(filepath.Join(dir, tt.in), tt.backend, pkg, command)
				if err != nil {
					t.Fatal(err)
				}
				want, err := os.ReadFile(filepath.Join(dir, tt.out))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Errorf("%s is not what go generate makes of %s: run go generate ./internal/lib/%s", tt.out, tt.in, pkg)
				}
			})
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte(libHeader+"fooStatus_t fooRun(struct weird x);\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(bad, "lib", "foo", "gen"); err == nil || !strings.Contains(err.Error(), "bad.txt") {
		t.Errorf("a bad table gave %v, want an error naming it", err)
	}
}

// TestParseLibArrayParams: an array parameter is a pointer, as C passes
// it, and /*device*/ marks a device address whatever it points to (an
// array of device pointers, as cublasGemmBatchedEx takes).
func TestParseLibArrayParams(t *testing.T) {
	fooTypes(t)
	f, err := parseLibProtos(strings.NewReader(libHeader + "fooStatus_t fooBatched(const void *const Aarray[] /*device*/, int counts[], long long int stride, void **out /*device*/);\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []libParam{
		{CName: "Aarray", Name: "aarray", GoType: "uintptr", Arg: "aarray"},
		{CName: "counts", Name: "counts", GoType: "*int32", Arg: "uintptr(unsafe.Pointer(counts))"},
		{CName: "stride", Name: "stride", GoType: "int64", Arg: "uintptr(stride)"},
		{CName: "out", Name: "out", GoType: "uintptr", Arg: "out"},
	} {
		if got := f.Tables[0].Funcs[0].Params[i]; got != want {
			t.Errorf("parameter %d parsed as %+v, want %+v", i, got, want)
		}
	}
}

// TestParseLibDeviceOut: /*device_out*/ marks host memory where C writes a
// device address (ncclMemAlloc's void **ptr), a *uintptr, and nothing but
// a pointer to a pointer.
func TestParseLibDeviceOut(t *testing.T) {
	f, err := parseLibProtos(strings.NewReader(libHeader + "fooStatus_t fooAlloc(void **ptr /*device_out*/, size_t size);\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.Tables[0].Funcs[0].Params[0], (libParam{CName: "ptr", Name: "ptr", GoType: "*uintptr", Arg: "uintptr(unsafe.Pointer(ptr))"}); got != want {
		t.Errorf("parsed as %+v, want %+v", got, want)
	}
	if _, err := parseLibProtos(strings.NewReader(libHeader + "fooStatus_t fooAlloc(void *ptr /*device_out*/);\n")); err == nil || !strings.Contains(err.Error(), "device_out") {
		t.Errorf("/*device_out*/ on void * gave %v, want an error naming it", err)
	}
}
