package main

// What modproxy would otherwise take from golang.org/x/mod v0.43.0
// (module.PseudoVersion, modfile.ModulePath, module.EscapePath,
// zip.CreateFromVCS), for the cases it meets: a pseudo-version with no
// tag before it, and a module zip made from a git commit. The rules for
// which files the zip holds are x/mod's (and so the go command's and the
// public proxy's): a file that differs changes the module's sum.

import (
	"archive/zip"
	"bytes"
	"fmt"
	"go/version"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// The limits on a module zip (x/mod's zip.MaxZipFile, MaxGoMod,
// MaxLICENSE).
const (
	maxZipFile = 500 << 20
	maxGoMod   = 16 << 20
	maxLICENSE = 16 << 20
)

// pseudoVersion is the version the go command gives commit, made at t,
// of a module with no tagged version: v0.0.0-yyyymmddhhmmss-abcdefabcdef.
func pseudoVersion(t time.Time, commit string) string {
	return "v0.0.0-" + t.UTC().Format("20060102150405") + "-" + commit[:12]
}

// modulePath is the path in gomod's module directive, or "" if it has none.
func modulePath(gomod string) string {
	for line := range strings.Lines(gomod) {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "module")
		if !ok {
			continue
		}
		p := strings.TrimSpace(rest)
		if len(p) == len(rest) || p == "" {
			continue // "modules", or "module" alone
		}
		if p[0] == '"' || p[0] == '`' {
			u, err := strconv.Unquote(p)
			if err != nil {
				return ""
			}
			return u
		}
		return p
	}
	return ""
}

// goVersion is the language version in gomod's go directive ("go1.25"),
// or "" if it has none.
func goVersion(gomod string) string {
	for line := range strings.Lines(gomod) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "go" {
			return version.Lang("go" + f[1])
		}
	}
	return ""
}

// escapePath is the module path as a proxy's folders spell it: each upper
// case letter as '!' and the letter in lower case.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if 'A' <= r && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// zipEntry is a file git archive wrote, or the repository's LICENSE.
type zipEntry struct {
	name string
	mode os.FileMode
	data []byte
}

// moduleZip is the module zip of the module in folder sub ("" for the
// root) at commit, as zip.CreateFromVCS makes it: the files git archive
// writes for sub (and the repository's LICENSE if sub has none), less
// those of nested modules, of vendored packages, symbolic links and
// .hg_archival.txt; an invalid file name fails it.
func moduleZip(root, commit, sub, modPath, vers string) ([]byte, error) {
	args := []string{"-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", commit}
	if sub != "" {
		args = append(args, sub)
	}
	raw, err := gitRaw(root, args...)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(strings.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, err
	}
	var files []zipEntry
	haveLICENSE := false
	for _, zf := range zr.File {
		if !strings.HasPrefix(zf.Name, sub) || strings.HasSuffix(zf.Name, "/") {
			continue
		}
		n := strings.TrimPrefix(strings.TrimPrefix(zf.Name, sub), "/")
		if n == "" {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		files = append(files, zipEntry{n, zf.Mode(), data})
		haveLICENSE = haveLICENSE || n == "LICENSE"
	}
	if !haveLICENSE && sub != "" {
		if lic, err := gitRaw(root, "cat-file", "blob", commit+":LICENSE"); err == nil {
			files = append(files, zipEntry{"LICENSE", 0o644, []byte(lic)})
		}
	}
	valid, err := checkFiles(files)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	prefix := modPath + "@" + vers + "/"
	for _, f := range valid {
		w, err := zw.Create(prefix + f.name)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// checkFiles is x/mod's zip.checkFiles: the files the zip holds, in
// order, or an error naming those that no module zip may hold.
func checkFiles(files []zipEntry) ([]zipEntry, error) {
	// Folders with a go.mod of their own (other than the root) are other
	// modules.
	haveGoMod := map[string]bool{}
	vers := ""
	for _, f := range files {
		dir, base := path.Split(f.name)
		if strings.EqualFold(base, "go.mod") && f.mode.IsRegular() {
			haveGoMod[dir] = true
			if f.name == "go.mod" {
				vers = goVersion(string(f.data))
			}
		}
	}
	inSubmodule := func(p string) bool {
		for {
			dir, _ := path.Split(p)
			if dir == "" {
				return false
			}
			if haveGoMod[dir] {
				return true
			}
			p = dir[:len(dir)-1]
		}
	}
	var valid []zipEntry
	var invalid []string
	seen := map[string]bool{}
	bad := func(p string, err error) {
		if !seen[p] {
			seen[p] = true
			invalid = append(invalid, fmt.Sprintf("%s: %v", p, err))
		}
	}
	collisions := collisionChecker{}
	left := int64(maxZipFile)
	for _, f := range files {
		p := f.name
		switch {
		case p != path.Clean(p):
			bad(p, fmt.Errorf("file path is not clean"))
			continue
		case path.IsAbs(p):
			bad(p, fmt.Errorf("file path is not relative"))
			continue
		case isVendoredPackage(p, vers), inSubmodule(p), p == ".hg_archival.txt":
			continue // omitted
		}
		if err := checkFilePath(p); err != nil {
			bad(p, err)
			continue
		}
		if strings.ToLower(p) == "go.mod" && p != "go.mod" {
			bad(p, fmt.Errorf("go.mod file not in module root directory"))
			continue
		}
		if err := collisions.check(p, false); err != nil {
			bad(p, err)
			continue
		}
		if !f.mode.IsRegular() {
			continue // a symbolic link, say: omitted
		}
		size := int64(len(f.data))
		if size > left {
			return nil, fmt.Errorf("module source tree too large (max size is %d bytes)", maxZipFile)
		}
		left -= size
		if p == "go.mod" && size > maxGoMod || p == "LICENSE" && size > maxLICENSE {
			bad(p, fmt.Errorf("file too large"))
			continue
		}
		valid = append(valid, f)
	}
	if len(invalid) > 0 {
		return nil, fmt.Errorf("files no module zip may hold:\n\t%s", strings.Join(invalid, "\n\t"))
	}
	return valid, nil
}

// isVendoredPackage is x/mod's: whether name is in a vendored package,
// by the rules of the module's Go version vers.
func isVendoredPackage(name, vers string) bool {
	if version.Compare(vers, "go1.24") >= 0 && name == "vendor/modules.txt" {
		return true
	}
	var i int
	if strings.HasPrefix(name, "vendor/") {
		i += len("vendor/")
	} else if j := strings.Index(name, "/vendor/"); j >= 0 {
		if version.Compare(vers, "go1.24") >= 0 {
			i = j + len("/vendor/")
		} else {
			i += len("/vendor/") // golang.org/issue/37397, kept for older modules' sums
		}
	} else {
		return false
	}
	return strings.Contains(name[i:], "/")
}

// checkFilePath is x/mod's module.CheckFilePath.
func checkFilePath(p string) error {
	switch {
	case !utf8.ValidString(p):
		return fmt.Errorf("invalid UTF-8")
	case p == "":
		return fmt.Errorf("empty string")
	case strings.Contains(p, "//"):
		return fmt.Errorf("double slash")
	case p[len(p)-1] == '/':
		return fmt.Errorf("trailing slash")
	}
	for elem := range strings.SplitSeq(p, "/") {
		if elem == "" {
			return fmt.Errorf("empty path element")
		}
		if strings.Count(elem, ".") == len(elem) {
			return fmt.Errorf("invalid path element %q", elem)
		}
		if elem[len(elem)-1] == '.' {
			return fmt.Errorf("trailing dot in path element")
		}
		for _, r := range elem {
			if !fileNameOK(r) {
				return fmt.Errorf("invalid char %q", r)
			}
		}
		short, _, _ := strings.Cut(elem, ".")
		for _, w := range badWindowsNames {
			if strings.EqualFold(w, short) {
				return fmt.Errorf("%q disallowed as path element component on Windows", short)
			}
		}
	}
	return nil
}

// fileNameOK is x/mod's: letters, digits and some punctuation.
func fileNameOK(r rune) bool {
	if r < utf8.RuneSelf {
		if '0' <= r && r <= '9' || 'A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' {
			return true
		}
		return strings.ContainsRune("!#$%&()+,-.=@[]^_{}~ ", r)
	}
	return unicode.IsLetter(r)
}

// badWindowsNames are the path elements Windows reserves.
var badWindowsNames = []string{
	"CON", "PRN", "AUX", "NUL",
	"COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7", "COM8", "COM9",
	"LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6", "LPT7", "LPT8", "LPT9",
}

// collisionChecker is x/mod's: it finds names that differ only in case,
// and a name that is both a file and a folder. Its keys are folded names.
type collisionChecker map[string]struct {
	path  string
	isDir bool
}

func (cc collisionChecker) check(p string, isDir bool) error {
	fold := strToFold(p)
	if other, ok := cc[fold]; ok {
		if p != other.path {
			return fmt.Errorf("case-insensitive file name collision: %q and %q", other.path, p)
		}
		if isDir != other.isDir {
			return fmt.Errorf("entry %q is both a file and a directory", p)
		}
		if !isDir {
			return fmt.Errorf("multiple entries for file %q", p)
		}
	} else {
		cc[fold] = struct {
			path  string
			isDir bool
		}{p, isDir}
	}
	if parent := path.Dir(p); parent != "." {
		return cc.check(parent, true)
	}
	return nil
}

// strToFold is x/mod's: strings.EqualFold(s, t) if and only if
// strToFold(s) == strToFold(t).
func strToFold(s string) string {
	var b strings.Builder
	for _, r := range s {
		for {
			r0 := r
			r = unicode.SimpleFold(r0)
			if r <= r0 {
				break
			}
		}
		if 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
