package sweep

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/internal/fakecuda"
)

// ZeroType is a pointer to the zero value of an exported type (nil for an
// interface or a constraint, which has no value). Driver says the zero
// value is a valid value of its own (a number or a plain struct), whose
// methods may ask the driver (a Result's name): those are checked for
// panics only.
type ZeroType struct {
	Zero   any
	Driver bool
}

// Zero is a test package's table of zero values: every exported type of
// its packages, by "pkg.Name", and every exported function, called with
// zero (and nil) objects (nil marks a function that takes none).
type Zero struct {
	Types map[string]ZeroType
	Funcs map[string]func() []error
	// Packages are the folders whose exported names the tables must
	// list, each with its package's name ("." is package cuda when run
	// from the root).
	Packages map[string]string
	// Driving are the functions that may call the driver with zero
	// objects (nvrtc.Compile, which has no context to check first).
	Driving []string
}

// ZeroValues checks z against the fake driver (on a GPU machine, in a
// child process against it): every exported name is in its tables; no
// method of a zero or nil receiver, and no function with zero objects,
// panics; each returns nil or an error wrapping ErrInvalidValue, ErrClosed
// or ErrNotSupported (a library missing); and none calls the driver unless
// its type says so (Driver).
func ZeroValues(t *testing.T, z Zero) {
	t.Helper()
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	cudatest.Context(t) // the driver is open: a call would count
	checkZeroValues(t, f, z)
}

func checkZeroValues(t *testing.T, f *fakecuda.Control, z Zero) {
	t.Helper()
	types, funcs := ExportedNames(t, z.Packages)
	for _, name := range types {
		if _, ok := z.Types[name]; !ok {
			t.Errorf("exported type %s is not in the zero types: add its zero value", name)
		}
	}
	for _, name := range funcs {
		if _, ok := z.Funcs[name]; !ok {
			t.Errorf("exported function %s is not in the zero functions: add a call with zero objects, or nil if it takes none", name)
		}
	}
	acceptable := func(err error) bool {
		return err == nil || errors.Is(err, cuda.ErrInvalidValue) || errors.Is(err, cuda.ErrClosed) ||
			errors.Is(err, cuda.ErrNotSupported) // a library missing
	}
	methods := 0
	for name, zt := range z.Types {
		if zt.Zero == nil {
			continue
		}
		ptr := reflect.ValueOf(zt.Zero)
		valueMethods := map[string]bool{}
		for i := range ptr.Elem().NumMethod() {
			valueMethods[ptr.Elem().Type().Method(i).Name] = true
		}
		receivers := []struct {
			what string
			v    reflect.Value
		}{{"zero", ptr}, {"nil", reflect.Zero(ptr.Type())}}
		for i := range ptr.NumMethod() {
			m := ptr.Type().Method(i)
			for _, r := range receivers {
				if r.what == "nil" && valueMethods[m.Name] {
					continue // a value receiver: Go itself dereferences nil
				}
				call := fmt.Sprintf("(%s %s).%s", r.what, name, m.Name)
				before := f.Calls()
				results, panicked := callZero(r.v.MethodByName(m.Name))
				methods++
				if panicked != nil {
					t.Errorf("%s panicked: %v", call, panicked)
					continue
				}
				for _, res := range results {
					if err, ok := res.Interface().(error); ok && res.Type().Name() == "error" && !acceptable(err) {
						t.Errorf("%s: error %v wraps neither ErrInvalidValue nor ErrClosed", call, err)
					}
				}
				if !zt.Driver && f.Calls() != before {
					t.Errorf("%s called the driver %d time(s)", call, f.Calls()-before)
				}
			}
		}
	}
	for name, fn := range z.Funcs {
		if fn == nil {
			continue
		}
		before := f.Calls()
		var errs []error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%s with zero objects panicked: %v", name, p)
				}
			}()
			errs = fn()
		}()
		for _, err := range errs {
			if err == nil || !acceptable(err) {
				t.Errorf("%s with zero objects: %v; want an error wrapping ErrInvalidValue or ErrClosed", name, err)
			}
		}
		driving := false
		for _, d := range z.Driving {
			driving = driving || d == name
		}
		if !driving && f.Calls() != before {
			t.Errorf("%s with zero objects called the driver %d time(s)", name, f.Calls()-before)
		}
	}
	t.Logf("%d types, %d method calls on zero and nil receivers, %d functions with zero objects", len(z.Types), methods, len(z.Funcs))
}

// callZero calls m with the zero value of each parameter.
func callZero(m reflect.Value) (results []reflect.Value, panicked any) {
	defer func() { panicked = recover() }()
	mt := m.Type()
	args := make([]reflect.Value, mt.NumIn())
	for i := range args {
		in := mt.In(i)
		if mt.IsVariadic() && i == mt.NumIn()-1 {
			args[i] = reflect.Zero(in.Elem())
			args = args[:i] // no variadic arguments
			break
		}
		args[i] = reflect.Zero(in)
	}
	return m.Call(args), nil
}

// ExportedNames returns the exported types and functions (not methods) of
// the packages in folders (folder: package name), as "pkg.Name".
func ExportedNames(t *testing.T, folders map[string]string) (types, funcs []string) {
	t.Helper()
	for dir, pkg := range folders {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.IsExported() {
						funcs = append(funcs, pkg+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
							types = append(types, pkg+"."+ts.Name.Name)
						}
					}
				}
			}
		}
	}
	return types, funcs
}

// API returns what a sweep must cover of z: its packages' exported
// functions, and the methods of its types' zero values ("Type.Method").
func API(t *testing.T, z Zero) []string {
	t.Helper()
	_, api := ExportedNames(t, z.Packages)
	for name, zt := range z.Types {
		if zt.Zero == nil {
			continue
		}
		typ := reflect.TypeOf(zt.Zero)
		short := name[strings.IndexByte(name, '.')+1:]
		for i := range typ.NumMethod() {
			api = append(api, short+"."+typ.Method(i).Name)
		}
	}
	return api
}
