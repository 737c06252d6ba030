package cuda_test

import (
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamplesHaveOutput: every Example of every package in the repository
// has an Output comment, so that go test runs it (an Example without one
// is only compiled, and can rot unseen). An Example that needs what the
// fake driver lacks is skipped there by its package's TestMain
// (cudatest.MainSkipFake), and runs in the GPU suite.
func TestExamplesHaveOutput(t *testing.T) {
	n := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, ex := range doc.Examples(f) {
			n++
			if ex.Output == "" && !ex.EmptyOutput {
				t.Errorf("%s: Example%s has no Output comment: go test compiles it but never runs it", path, ex.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no Example found: the walk looked in the wrong place")
	}
	t.Logf("%d Examples", n)
}
