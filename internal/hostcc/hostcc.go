// Package hostcc compiles CUDA C kernels for the host, so that the fake
// driver (internal/fakecuda) runs them where there is no GPU and no NVRTC:
// a test's stand-in for NVRTC.
//
// Compile prepends shim.h (CUDA's keywords, threadIdx and its kin, the
// barriers, warp shuffles, atomics and math in plain C++) to a source,
// compiles it with the machine's C++ compiler into a shared library in a
// cache folder, and returns an image the fake's cuModuleLoadData accepts:
// PTX-looking text with a .entry per kernel and a line naming the library.
// The fake loads the library and runs each block's threads as fibers,
// switching at __syncthreads and at warp shuffles, so that block- and
// warp-synchronous code computes what it does on a GPU.
package hostcc

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

//go:embed shim.h
var shim string

// LibraryLine starts the image's line that names the compiled library:
// the fake driver (hostkernels.c) looks for it.
const LibraryLine = "// gocuda hostcc library: "

// flags are the compiler's, part of every cache key. No exceptions or
// RTTI: kernels have neither, and both cost compile time.
var flags = []string{"-std=c++17", "-O1", "-fPIC", "-shared", "-pipe", "-fno-exceptions", "-fno-rtti", "-x", "c++"}

// EnvCache moves the folder of the compiled kernels (by default
// gocuda/hostcc under os.UserCacheDir).
const EnvCache = "GOCUDA_HOSTCC_CACHE"

var (
	lookOnce sync.Once
	cxxPath  string
	cxxErr   error
)

// compiler returns the C++ compiler's path: $CXX, or g++.
func compiler() (string, error) {
	lookOnce.Do(func() {
		cxx := os.Getenv("CXX")
		if cxx == "" {
			cxx = "g++"
		}
		cxxPath, cxxErr = exec.LookPath(cxx)
	})
	return cxxPath, cxxErr
}

// Available reports whether there is a C++ compiler to compile kernels
// with.
func Available() bool {
	_, err := compiler()
	return err == nil
}

// CompileError is a source that did not compile: the compiler's log, in
// which the source's lines are name's.
type CompileError struct {
	Name string
	Log  string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("hostcc: compiling %s for the host:\n%s", e.Name, e.Log)
}

// entryRE finds a kernel's signature: its name, then its parameters
// from the parenthesis on.
var entryRE = regexp.MustCompile(`extern\s+"C"\s+__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+([A-Za-z_]\w*)\s*\(`)

// dynamicSharedRE finds a declaration of dynamic shared memory, which
// becomes a pointer to the block's (the fake's): extern __shared__ T name[];
var dynamicSharedRE = regexp.MustCompile(`extern\s+__shared__\s+([^;{}]*?)\s*\b([A-Za-z_]\w*)\s*\[\s*\]\s*;`)

// Compile compiles source, named name in the compiler's messages (as
// "kernel.cu"), and returns the image to load. A source that does not
// compile is a *CompileError.
func Compile(source, name string) ([]byte, error) {
	cxx, err := compiler()
	if err != nil {
		return nil, fmt.Errorf("hostcc: no C++ compiler: %w", err)
	}
	if name == "" {
		name = "kernel.cu"
	}
	entries := entryRE.FindAllStringSubmatchIndex(source, -1)
	body := dynamicSharedRE.ReplaceAllString(source, "$1 *const $2 = ($1 *)gocuda_dynamic_shared();")
	var text strings.Builder
	text.WriteString(shim)
	fmt.Fprintf(&text, "#line 1 %q\n", name)
	text.WriteString(body)
	text.WriteString("\n#line 1 \"<gocuda hostcc entries>\"\n")
	var image strings.Builder
	for _, m := range entries {
		kernel := source[m[2]:m[3]]
		fmt.Fprintf(&text, "GOCUDA_ENTRY(%s)\n", kernel)
		fmt.Fprintf(&image, ".visible .entry %s(%s)\n{\n\tret;\n}\n", kernel, params(source[m[1]:]))
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "%s\n%q\n", cxx, flags)
	sum.Write([]byte(text.String()))
	key := hex.EncodeToString(sum.Sum(nil)[:12])
	dir := cacheDir()
	lib := filepath.Join(dir, key+".so")
	if _, err := os.Stat(lib); err != nil {
		if err := build(cxx, dir, lib, name, text.String()); err != nil {
			return nil, err
		}
	}
	head := fmt.Sprintf("// %s compiled for the host by internal/hostcc: the fake driver runs it\n.version 8.0\n.target sm_90\n.address_size 64\n%s%s\n\n", name, LibraryLine, lib)
	return []byte(head + image.String()), nil
}

// build compiles text into lib: into a file of its own first, renamed
// into place, so that processes compiling the same kernel at once do not
// see each other's halves.
func build(cxx, dir, lib, name, text string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("hostcc: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return fmt.Errorf("hostcc: %w", err)
	}
	defer os.RemoveAll(tmp)
	// The file's name is the compiler's, not name (a kernel's, which may
	// be longer than a file's may): the text's #line gives messages name.
	src := filepath.Join(tmp, "kernel.cu")
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		return fmt.Errorf("hostcc: %w", err)
	}
	out := filepath.Join(tmp, "kernel.so")
	args := append(append([]string{}, flags...), "-o", out, src, "-lm")
	if msg, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		log := strings.TrimSpace(strings.ReplaceAll(string(msg), src+":", ""))
		if log == "" {
			log = err.Error()
		}
		return &CompileError{Name: name, Log: log}
	}
	if err := os.Rename(out, lib); err != nil {
		return fmt.Errorf("hostcc: %w", err)
	}
	return nil
}

func cacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "gocuda", "hostcc")
}

// params returns the PTX parameter list of a signature's parameters
// (rest starts after its parenthesis). It is for the reader: the fake
// takes the sizes from the compiled library, which knows every type.
func params(rest string) string {
	depth, end := 0, len(rest)
	for i, r := range rest {
		if r == '(' || r == '<' {
			depth++
		} else if r == '>' {
			depth--
		} else if r == ')' {
			if depth == 0 {
				end = i
				break
			}
			depth--
		}
	}
	var out []string
	for _, p := range splitTop(rest[:end]) {
		p = strings.TrimSpace(p)
		if p == "" || p == "void" {
			continue
		}
		i := strings.LastIndexFunc(p, func(r rune) bool {
			return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
		})
		typ, pname := p[:i+1], p[i+1:]
		out = append(out, fmt.Sprintf(".param %s %s", ptxType(typ), pname))
	}
	return strings.Join(out, ", ")
}

// splitTop splits a parameter list at its commas outside brackets.
func splitTop(s string) []string {
	var out []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '(', '<', '[':
			depth++
		case ')', '>', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[from:i])
				from = i + 1
			}
		}
	}
	return append(out, s[from:])
}

// ptxType names a C parameter type's PTX type, as far as it is a plain
// one; another is shown as 4 bytes (a typedef of the source's).
func ptxType(t string) string {
	t = strings.Join(strings.Fields(strings.NewReplacer("const", " ", "volatile", " ", "__restrict__", " ").Replace(t)), " ")
	switch {
	case strings.Contains(t, "*"):
		return ".u64"
	case t == "double":
		return ".f64"
	case t == "float":
		return ".f32"
	case strings.Contains(t, "long long") || strings.Contains(t, "int64") || t == "long" || t == "unsigned long":
		return ".u64"
	case strings.Contains(t, "short"):
		return ".u16"
	case strings.Contains(t, "char") || t == "bool":
		return ".u8"
	}
	return ".u32"
}
