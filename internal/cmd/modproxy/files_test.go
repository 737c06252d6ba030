package main

import (
	"archive/zip"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestModuleZip: the files a module zip holds, by x/mod's rules, from a
// repository with a nested module, vendored packages (by the rules before
// and after Go 1.24), a symbolic link, .hg_archival.txt and a LICENSE at
// the root only. The lists are what golang.org/x/mod v0.43.0's
// zip.CreateFromVCS wrote for the same repository.
func TestModuleZip(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                 "module example.com/Syn\n\ngo 1.25\n",
		"LICENSE":                "lic\n",
		"a/b.go":                 "8\n",
		"vendor/y/y.go":          "6\n",
		"vendor/modules.txt":     "7\n",
		".hg_archival.txt":       "9\n",
		"sub/go.mod":             "module example.com/Syn/sub // c\n\ngo 1.23\n",
		"sub/a.go":               "5\n",
		"sub/vendor/x/x.go":      "1\n",
		"sub/vendor/modules.txt": "2\n",
		"sub/pkg/vendor/v.go":    "3\n",
		"sub/inner/go.mod":       "m\n",
		"sub/inner/i.go":         "4\n",
		"sub/.hg_archival.txt":   "h\n",
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.go", filepath.Join(root, "sub", "link.go")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x"},
	} {
		if _, err := gitRaw(root, args...); err != nil {
			t.Fatal(err)
		}
	}
	commit, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if got := modulePath(files["sub/go.mod"]); got != "example.com/Syn/sub" {
		t.Errorf("modulePath = %q", got)
	}
	if got := escapePath("example.com/Syn/sub"); got != "example.com/!syn/sub" {
		t.Errorf("escapePath = %q", got)
	}
	if got := pseudoVersion(time.Date(2026, 12, 5, 6, 20, 30, 0, time.UTC), commit); got != "v0.0.0-20261205062030-"+commit[:12] {
		t.Errorf("pseudoVersion = %q", got)
	}
	for _, c := range []struct {
		sub, path string
		want      []string
	}{
		{"", "example.com/Syn", []string{"LICENSE", "a/b.go", "go.mod"}},
		// Go 1.23's rules keep sub/vendor/modules.txt and drop
		// sub/pkg/vendor/v.go (golang.org/issue/37397).
		{"sub", "example.com/Syn/sub", []string{"a.go", "go.mod", "vendor/modules.txt", "LICENSE"}},
	} {
		z, err := moduleZip(root, commit, c.sub, c.path, "v0.0.0-20261205062030-"+commit[:12])
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		prefix := c.path + "@v0.0.0-20261205062030-" + commit[:12] + "/"
		for _, f := range zr.File {
			n, ok := strings.CutPrefix(f.Name, prefix)
			if !ok {
				t.Errorf("%s: %s lacks the prefix %s", c.path, f.Name, prefix)
			}
			got = append(got, n)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: zip holds %q, want %q", c.path, got, c.want)
		}
	}
}
