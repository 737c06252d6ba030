package dl_test

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unsafe"

	"github.com/gocuda/cuda/internal/dl"
	"github.com/gocuda/cuda/internal/fakecuda"
)

var testLib = dl.Library{
	Name:    "FOO",
	Env:     "GOCUDA_LIBFOO",
	Sonames: []string{"libfoo.so.13", "libfoo.so"},
	Wheels:  []string{"cu13/lib", "foo/lib"},
	Install: "install foo",
}

// tree makes the files named (relative to a temporary folder) and returns
// the folder.
func tree(t *testing.T, files ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range files {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeEnv is an environment of vars, with python3 at python ("" for none).
func fakeEnv(vars map[string]string, python string) dl.Env {
	return dl.Env{
		Getenv: func(k string) string { return vars[k] },
		LookPath: func(string) (string, error) {
			if python == "" {
				return "", errors.New("no python3")
			}
			return python, nil
		},
	}
}

func TestCandidates(t *testing.T) {
	root := tree(t,
		"venv/bin/python3",
		"venv/lib/python3.12/site-packages/nvidia/cu13/lib/libfoo.so.13",
		"usr/bin/python3",
		"usr/local/lib/python3.11/dist-packages/nvidia/foo/lib/libfoo.so.13",
		"usr/lib/python3/dist-packages/nvidia/cu13/lib/libbar.so.13",
		"home/.local/lib/python3.10/site-packages/nvidia/foo/lib/libfoo.so",
		"pyenv/shims/python3",
		"pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/lib/libfoo.so.13",
		"pyenv/versions/3.12.1/lib/python3.12/site-packages/nvidia/foo/lib/libfoo.so.13",
		"home/.pyenv/versions/3.10.4/lib/python3.10/site-packages/nvidia/cu13/lib/libfoo.so.13",
		"conda/lib/python3.11/site-packages/nvidia/cu13/lib/libfoo.so.13",
	)
	j := func(p string) string { return filepath.Join(root, p) }
	system := append([]string{"libfoo.so.13", "libfoo.so"}, func() (out []string) {
		for _, d := range dl.CUDADirs {
			out = append(out, filepath.Join(d, "libfoo.so.13"), filepath.Join(d, "libfoo.so"))
		}
		return out
	}()...)
	for _, tt := range []struct {
		name   string
		vars   map[string]string
		python string
		wheels []string // after the loader's path and /usr/local/cuda
		only   string   // the override: nothing else is tried
	}{
		{name: "override alone", vars: map[string]string{"GOCUDA_LIBFOO": "/opt/libfoo.so.7"}, python: j("usr/bin/python3"), only: "/opt/libfoo.so.7"},
		{name: "no python", vars: map[string]string{}},
		{name: "system python", python: j("usr/bin/python3"),
			wheels: []string{j("usr/local/lib/python3.11/dist-packages/nvidia/foo/lib/libfoo.so.13")}},
		{name: "virtual environment first, then user site", vars: map[string]string{"VIRTUAL_ENV": j("venv"), "HOME": j("home")}, python: j("usr/bin/python3"),
			wheels: []string{
				j("venv/lib/python3.12/site-packages/nvidia/cu13/lib/libfoo.so.13"),
				j("usr/local/lib/python3.11/dist-packages/nvidia/foo/lib/libfoo.so.13"),
				j("home/.pyenv/versions/3.10.4/lib/python3.10/site-packages/nvidia/cu13/lib/libfoo.so.13"),
				j("home/.local/lib/python3.10/site-packages/nvidia/foo/lib/libfoo.so"),
			}},
		{name: "pyenv's shim on the PATH, PYENV_ROOT set", vars: map[string]string{"PYENV_ROOT": j("pyenv")}, python: j("pyenv/shims/python3"),
			wheels: []string{
				j("pyenv/versions/3.12.1/lib/python3.12/site-packages/nvidia/foo/lib/libfoo.so.13"),
				j("pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/lib/libfoo.so.13"),
			}},
		{name: "pyenv's selected version first", vars: map[string]string{"PYENV_ROOT": j("pyenv"), "PYENV_VERSION": "3.11.7"}, python: j("pyenv/shims/python3"),
			wheels: []string{
				j("pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/cu13/lib/libfoo.so.13"),
				j("pyenv/versions/3.12.1/lib/python3.12/site-packages/nvidia/foo/lib/libfoo.so.13"),
			}},
		{name: "pyenv in the home folder", vars: map[string]string{"HOME": j("home")},
			wheels: []string{
				j("home/.pyenv/versions/3.10.4/lib/python3.10/site-packages/nvidia/cu13/lib/libfoo.so.13"),
				j("home/.local/lib/python3.10/site-packages/nvidia/foo/lib/libfoo.so"),
			}},
		{name: "conda environment", vars: map[string]string{"CONDA_PREFIX": j("conda")},
			wheels: []string{j("conda/lib/python3.11/site-packages/nvidia/cu13/lib/libfoo.so.13")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := testLib.Candidates(fakeEnv(tt.vars, tt.python))
			want := append(append([]string(nil), system...), tt.wheels...)
			if tt.only != "" {
				want = []string{tt.only}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("candidates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestOpenFromWheel: a library found only in a wheel's folder loads, and a
// missing one's error lists what was tried and how to fix it.
func TestOpenFromWheel(t *testing.T) {
	fake, err := fakecuda.Build()
	if err != nil {
		t.Skip(err)
	}
	so, err := os.ReadFile(fake)
	if err != nil {
		t.Fatal(err)
	}
	root := tree(t, "venv/bin/python3")
	wheel := filepath.Join(root, "venv/lib/python3.12/site-packages/nvidia/cu13/lib/libfoo.so.13")
	if err := os.MkdirAll(filepath.Dir(wheel), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wheel, so, 0o755); err != nil {
		t.Fatal(err)
	}
	env := fakeEnv(map[string]string{"VIRTUAL_ENV": filepath.Join(root, "venv")}, "")
	h, path, err := testLib.Open(env)
	if err != nil || h == 0 || path != wheel {
		t.Fatalf("Open = %#x, %q, %v; want the wheel's %s", h, path, err, wheel)
	}
	missing := testLib
	missing.Sonames = []string{"libnothere.so.1"}
	_, _, err = missing.Open(env)
	// One line: what is missing and what to do; the paths are the
	// error's Tried.
	for _, want := range []string{"FOO not found", "install foo", "or set GOCUDA_LIBFOO to its path"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if err != nil && (len(err.Error()) > 200 || strings.Contains(err.Error(), "libnothere")) {
		t.Errorf("error %q lists the paths (%d characters): they belong in Tried", err, len(err.Error()))
	}
	var nf *dl.NotFoundError
	if !errors.As(err, &nf) || !slices.Contains(nf.Tried, "/usr/local/cuda/lib64/libnothere.so.1") || nf.Tried[0] != "libnothere.so.1" {
		t.Errorf("error %v: Tried does not list the paths tried", err)
	}
	if !errors.Is(err, dl.ErrNotFound) {
		t.Errorf("error %v is not dl.ErrNotFound", err)
	}
	_, _, err = testLib.Open(fakeEnv(map[string]string{"GOCUDA_LIBFOO": "/nonexistent/libfoo.so"}, ""))
	if err == nil || !strings.Contains(err.Error(), "GOCUDA_LIBFOO=/nonexistent/libfoo.so does not load") || !strings.Contains(err.Error(), "unset it") ||
		strings.Contains(err.Error(), "or set GOCUDA_LIBFOO") {
		t.Errorf("a bad override gave %v; want the variable named with its value, and no hint to set it", err)
	}
}

// TestSymbols: present names resolve, missing ones stay 0 and are named.
func TestSymbols(t *testing.T) {
	fake, err := fakecuda.Build()
	if err != nil {
		t.Skip(err)
	}
	lib := dl.Library{Name: "fake", Env: "GOCUDA_LIBFAKE_UNSET", Sonames: []string{fake}}
	h, path, err := lib.Open(fakeEnv(nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	var init, nope uintptr
	err = dl.Symbols(h, path, map[string]*uintptr{"cuInit": &init, "cuNoSuchFunction": &nope})
	if init == 0 || nope != 0 {
		t.Errorf("cuInit at %#x, cuNoSuchFunction at %#x", init, nope)
	}
	if err == nil || !strings.Contains(err.Error(), "cuNoSuchFunction") || strings.Contains(err.Error(), "cuInit") {
		t.Errorf("error %v: want it to name cuNoSuchFunction alone", err)
	}
	if err := dl.Symbols(h, path, map[string]*uintptr{"cuInit": &init}); err != nil {
		t.Errorf("all present: %v", err)
	}
}

func TestString(t *testing.T) {
	b := []byte("hello\x00world")
	if s := dl.String(uintptr(unsafe.Pointer(&b[0]))); s != "hello" {
		t.Errorf("String = %q", s)
	}
	if dl.String(0) != "" {
		t.Error("dl.String(0) not empty")
	}
}

// winFiles is a Windows file system of the files named, for the search's
// Exists and Glob: the search is tested on Linux with Windows-shaped paths.
func winFiles(files ...string) (exists func(string) bool, glob func(string) ([]string, error)) {
	set := map[string]bool{}
	for _, f := range files {
		for p := f; strings.Contains(p, `\`); p = p[:strings.LastIndex(p, `\`)] {
			set[strings.ToLower(p)] = true // a file and the folders above it
		}
	}
	exists = func(p string) bool { return set[strings.ToLower(p)] }
	glob = func(pattern string) ([]string, error) {
		var out []string
		for p := range set {
			// path.Match's * stops at '/': swap the separators.
			ok, err := path.Match(strings.ReplaceAll(strings.ToLower(pattern), `\`, "/"), strings.ReplaceAll(p, `\`, "/"))
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, p)
			}
		}
		sort.Strings(out)
		return out, nil
	}
	return exists, glob
}

// TestWindowsCandidates: on Windows the DLL names come first (the system's
// search), then CUDA_PATH's bin\x64 and bin, the PATH's folders that hold
// the DLL, and the wheels' bin folders of the virtual environment, the
// python on the PATH, the user's Pythons and the user's site.
func TestWindowsCandidates(t *testing.T) {
	lib := testLib
	lib.DLLs = []string{"foo64_13.dll", "foo64_12.dll"}
	exists, glob := winFiles(
		`c:\tools\foo64_12.dll`,
		`c:\work\venv\scripts\python.exe`,
		`c:\work\venv\lib\site-packages\nvidia\cu13\bin\x86_64\foo64_13.dll`,
		`c:\python312\python.exe`,
		`c:\python312\lib\site-packages\nvidia\foo\bin\foo64_12.dll`,
		`c:\users\me\appdata\local\programs\python\python311\lib\site-packages\nvidia\foo\bin\foo64_13.dll`,
		`c:\users\me\appdata\roaming\python\python310\site-packages\nvidia\cu13\bin\foo64_13.dll`,
		`c:\conda\lib\site-packages\nvidia\cu13\bin\x64\foo64_13.dll`,
	)
	cudaPath := []string{
		`C:\CUDA\v13.0\bin\x64\foo64_13.dll`, `C:\CUDA\v13.0\bin\x64\foo64_12.dll`,
		`C:\CUDA\v13.0\bin\foo64_13.dll`, `C:\CUDA\v13.0\bin\foo64_12.dll`,
	}
	for _, tt := range []struct {
		name   string
		vars   map[string]string
		python string
		want   []string // after the DLL names alone
	}{
		{name: "override alone", vars: map[string]string{"GOCUDA_LIBFOO": `D:\foo.dll`}, want: nil},
		{name: "nothing installed", vars: map[string]string{}},
		{name: "CUDA_PATH and the PATH", vars: map[string]string{"CUDA_PATH": `C:\CUDA\v13.0\`, "PATH": `C:\Windows;"c:\tools";;c:\empty`},
			want: append(append([]string(nil), cudaPath...), `c:\tools\foo64_12.dll`)},
		{name: "virtual environment, its python on the PATH", vars: map[string]string{"VIRTUAL_ENV": `c:\work\venv`}, python: `c:\work\venv\Scripts\python.exe`,
			want: []string{`c:\work\venv\lib\site-packages\nvidia\cu13\bin\x86_64\foo64_13.dll`}},
		{name: "system python, the user's Pythons and site", python: `c:\python312\python.exe`,
			vars: map[string]string{"LOCALAPPDATA": `c:\users\me\appdata\local`, "APPDATA": `c:\users\me\appdata\roaming`},
			want: []string{
				`c:\python312\lib\site-packages\nvidia\foo\bin\foo64_12.dll`,
				`c:\users\me\appdata\local\programs\python\python311\lib\site-packages\nvidia\foo\bin\foo64_13.dll`,
				`c:\users\me\appdata\roaming\python\python310\site-packages\nvidia\cu13\bin\foo64_13.dll`,
			}},
		{name: "conda environment", vars: map[string]string{"CONDA_PREFIX": `c:\conda`},
			want: []string{`c:\conda\lib\site-packages\nvidia\cu13\bin\x64\foo64_13.dll`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := fakeEnv(tt.vars, tt.python)
			env.GOOS, env.Exists, env.Glob = "windows", exists, glob
			got := lib.Candidates(env)
			want := append(append([]string(nil), lib.DLLs...), tt.want...)
			if p := tt.vars["GOCUDA_LIBFOO"]; p != "" {
				want = []string{p}
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("candidates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestNoWindowsBuild: a library without DLLs (NCCL) is not found on
// Windows, in words, with nothing tried.
func TestNoWindowsBuild(t *testing.T) {
	env := fakeEnv(map[string]string{}, "")
	env.GOOS = "windows"
	_, _, err := testLib.Open(env)
	if !errors.Is(err, dl.ErrNotFound) || !strings.Contains(err.Error(), "FOO has no build for windows") {
		t.Errorf("Open = %v, want ErrNotFound saying FOO has no build for windows", err)
	}
}
