package cuda_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeQuickstartBuilds: the program in README.md's Quickstart compiles
// as written (go vet builds it), so that a reader can copy it. It needs the
// go command, which the GPU machine lacks: there it skips.
func TestReadmeQuickstartBuilds(t *testing.T) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command here")
	}
	readme := string(must(os.ReadFile("README.md"))(t))
	_, rest, ok := strings.Cut(readme, "## Quickstart")
	if !ok {
		t.Fatal("README.md has no Quickstart section")
	}
	_, rest, ok = strings.Cut(rest, "```go\n")
	if !ok {
		t.Fatal("README.md's Quickstart has no Go program")
	}
	program, _, ok := strings.Cut(rest, "```\n")
	if !ok || !strings.HasPrefix(program, "package main\n") {
		t.Fatal("README.md's Quickstart program is not a whole package main")
	}
	// Inside the module, so that it builds with the library as it is here.
	dir, err := os.MkdirTemp("testdata", "readme")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gocmd, "vet", "./"+filepath.ToSlash(dir))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("README.md's Quickstart program does not build: %v\n%s", err, out)
	}
}
