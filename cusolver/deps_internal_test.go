package cusolver

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gocuda/cuda/internal/dl"
)

// TestPreloadDeps: a library in one wheel folder that needs another in a
// second folder, which the loader does not search, loads once preloadFor
// has loaded its dependency from the wheels; a missing file is not taken
// for a missing dependency.
func TestPreloadDeps(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if runtime.GOOS != "linux" || err != nil {
		t.Skip("needs Linux and a C compiler")
	}
	dir := t.TempDir()
	site := filepath.Join(dir, "venv", "lib", "python3.99", "site-packages", "nvidia")
	depDir, mainDir := filepath.Join(site, "cublas", "lib"), filepath.Join(site, "cusolver", "lib")
	for _, d := range []string{depDir, mainDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Names of their own, since a library once loaded stays loaded.
	tag := rand.Uint32()
	dep, main := fmt.Sprintf("libgocudadep%d.so.7", tag), fmt.Sprintf("libgocudamain%d.so.3", tag)
	src := filepath.Join(dir, "x.c")
	build := func(code string, args ...string) {
		t.Helper()
		if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(cc, append([]string{"-shared", "-fPIC", src}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("cc: %v\n%s", err, out)
		}
	}
	build("int gocuda_dep(void) { return 42; }\n", "-Wl,-soname,"+dep, "-o", filepath.Join(depDir, dep))
	build("int gocuda_dep(void);\nint gocuda_main(void) { return gocuda_dep() + 1; }\n", "-o", filepath.Join(mainDir, main), "-L"+depDir, "-l:"+dep)

	env := dl.Env{
		Getenv:   func(k string) string { return map[string]string{"VIRTUAL_ENV": filepath.Join(dir, "venv")}[k] },
		LookPath: func(string) (string, error) { return "", exec.ErrNotFound },
	}
	target := dl.Library{Name: "main", Sonames: []string{main}, Wheels: []string{"cusolver/lib"}}
	path := filepath.Join(mainDir, main)
	if _, err := dl.Load(path); err == nil || !strings.Contains(err.Error(), dep) {
		t.Fatalf("loading %s before: %v; want the loader missing %s", main, err, dep)
	}
	if !preloadFor(env, target) {
		t.Fatal("preloadFor found no candidate that loads")
	}
	h, err := dl.Load(path)
	if err != nil {
		t.Fatalf("loading %s after preloadFor: %v", main, err)
	}
	if sym, err := dl.Sym(h, "gocuda_main"); err != nil || sym == 0 {
		t.Errorf("gocuda_main: %#x, %v", sym, err)
	}

	// A file that is not there: nothing to preload, whatever its name.
	missing := dl.Library{Name: "missing", Env: "GOCUDA_TEST_MISSING"}
	menv := env
	menv.Getenv = func(k string) string {
		if k == "GOCUDA_TEST_MISSING" {
			return filepath.Join(dir, "none", dep)
		}
		return env.Getenv(k)
	}
	if preloadFor(menv, missing) {
		t.Error("preloadFor of a missing file reported success")
	}
}
