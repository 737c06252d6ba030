// Command modproxy writes the gocuda modules at a git revision into a
// folder laid out as a Go module proxy (GOPROXY=file://DIR), each at the
// pseudo-version a public proxy would give that commit, zipped as the go
// command zips a module from version control. scripts/pin-command.sh uses
// it to point cmd/gocuda's go.mod at a commit of the library without a
// replace directive (so that go install ...@latest works), and
// scripts/check-install.sh to run that go install here, offline from the
// repository's host.
//
//	go run ./internal/cmd/modproxy -dir DIR -rev REV [module folder ...]
//
// A module folder is relative to the repository's root: "." for the
// library, "bench", "cmd/gocuda". It prints a line per module: its path
// and the version written.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	dir := flag.String("dir", "", "the proxy folder to write into (made if missing)")
	rev := flag.String("rev", "HEAD", "the git revision to write the modules at")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: modproxy -dir DIR [-rev REV] [module folder ...]\n\nWrites the modules at REV into DIR as a Go module proxy.\n\nflags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	folders := flag.Args()
	if len(folders) == 0 {
		folders = []string{"."}
	}
	if err := run(*dir, *rev, folders); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(dir, rev string, folders []string) error {
	root, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	commit, err := git(root, "rev-parse", rev+"^{commit}")
	if err != nil {
		return err
	}
	when, err := git(root, "show", "-s", "--format=%ct", commit)
	if err != nil {
		return err
	}
	var secs int64
	if _, err := fmt.Sscan(when, &secs); err != nil {
		return fmt.Errorf("commit time %q: %v", when, err)
	}
	t := time.Unix(secs, 0).UTC()
	version := module.PseudoVersion("v0", "", t, commit[:12])
	for _, folder := range folders {
		sub := path.Clean(filepath.ToSlash(folder))
		if sub == "." {
			sub = ""
		}
		gomod, err := gitRaw(root, "show", commit+":"+path.Join(sub, "go.mod"))
		if err != nil {
			return fmt.Errorf("%s has no go.mod at %s", folder, rev)
		}
		modPath := modfile.ModulePath([]byte(gomod))
		if modPath == "" {
			return fmt.Errorf("%s/go.mod names no module", folder)
		}
		if err := write(dir, root, commit, sub, module.Version{Path: modPath, Version: version}, gomod, t); err != nil {
			return fmt.Errorf("%s: %v", modPath, err)
		}
		fmt.Println(modPath, version)
	}
	return nil
}

// write puts m's .info, .mod and .zip, its @latest and an empty list of
// tagged versions into the proxy.
func write(dir, root, commit, sub string, m module.Version, gomod string, t time.Time) error {
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	base := filepath.Join(dir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, t})
	if err != nil {
		return err
	}
	var z bytes.Buffer
	if err := zip.CreateFromVCS(&z, m, root, commit, sub); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		filepath.Join(base, m.Version+".info"): info,
		filepath.Join(base, m.Version+".mod"):  []byte(gomod),
		filepath.Join(base, m.Version+".zip"):  z.Bytes(),
		filepath.Join(base, "..", "@latest"):   info,
		// No tagged versions: an empty list, so that the go command asks
		// @latest here rather than the next proxy.
		filepath.Join(base, "list"): nil,
	} {
		if err := os.WriteFile(name, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// git runs git in dir and returns its output, trimmed.
func git(dir string, args ...string) (string, error) {
	out, err := gitRaw(dir, args...)
	return strings.TrimSpace(out), err
}

// gitRaw runs git in dir and returns its output as it is.
func gitRaw(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return string(out), nil
}
