package dl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/fakecuda"
)

// TestLazy opens the fake driver as a library FOO whose table has a
// function it has (cuInit) and one it lacks.
func TestLazy(t *testing.T) {
	fake, err := fakecuda.Build()
	if err != nil {
		t.Skip("no C compiler for the fake driver:", err)
	}
	for _, tt := range []struct {
		name     string
		file     string   // GOCUDA_LIBFOO
		required []string // the table's
		want     string   // in Open's error; "" for none
		bound    bool     // Bind ran
	}{
		{"optional missing", fake, []string{"cuInit"}, "", true},
		{"required missing", fake, []string{"cuInit", "cuNoSuchFunction", "cuNorThis"}, fake + " is not FOO: it lacks cuNoSuchFunction, cuNorThis", false},
		{"not found", "/no/such/libfoo.so", nil, "GOCUDA_LIBFOO=/no/such/libfoo.so does not load", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var init, nope uintptr
			bound := 0
			lib := &dl.Lazy{
				Library: testLib,
				Table: &dl.Table{
					Symbols:  []dl.Symbol{{Name: "cuInit", Addr: &init}, {Name: "cuNoSuchFunction", Addr: &nope}, {Name: "cuNorThis", Addr: new(uintptr)}},
					Required: tt.required,
					Bind:     func() { bound++ },
				},
				Env: fakeEnv(map[string]string{"GOCUDA_LIBFOO": tt.file}, ""),
			}
			for range 2 { // the second Open answers as the first
				err := lib.Open()
				if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
					t.Fatalf("Open = %v, want %q", err, tt.want)
				}
			}
			if tt.want == "" && (init == 0 || nope != 0) {
				t.Errorf("cuInit at %#x, cuNoSuchFunction at %#x: want the first resolved, the second 0", init, nope)
			}
			if want := map[bool]int{true: 1}[tt.bound]; bound != want {
				t.Errorf("Bind ran %d times, want %d", bound, want)
			}
			if tt.name == "not found" {
				if !errors.Is(lib.Open(), dl.ErrNotFound) || lib.Path() != "" {
					t.Errorf("Open = %v, Path = %q: want ErrNotFound and no path", lib.Open(), lib.Path())
				}
				return
			}
			if lib.Path() != fake {
				t.Errorf("Path = %q, want %q", lib.Path(), fake)
			}
			if got, want := lib.Lacks("cuNoSuchFunction"), fake+" has no cuNoSuchFunction"; got != want {
				t.Errorf("Lacks = %q, want %q", got, want)
			}
		})
	}
}
