// Package fakecuda builds and controls the fake libcuda that gocuda's tests
// run against on machines without a GPU.
//
// The fake is C (csrc: driver.c, the driver core; kernels.c, modules and
// kernel emulation; hostkernels.c, kernels compiled for the host by
// internal/hostcc, run a block's threads as fibers of fiber.c; pools.c, stream-ordered memory pools; graphs.c; ipc.c;
// nccl.c; cublas.c; rand.c, cuRAND; fft.c, cuFFT; sparse.c, cuSPARSE; solver.c, cuSOLVER; dnn.c, cuDNN; the shared fakecuda.h and the generated zenums.h),
// compiled on first use with the machine's C
// compiler into a cache folder, and loaded through the very same loading and
// calling code as the real driver (GOCUDA_LIBCUDA points at it). Its test
// hooks are reached here directly, through purego.
package fakecuda

import (
	"crypto/sha256"
	"embed"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/gocuda/cuda/internal/dl"
)

//go:generate go run ../driver/gen -in ../driver/enums.txt -backend enums-c -out csrc/zenums.h

//go:embed csrc/*.c csrc/*.h
var source embed.FS

// sourceFiles returns the fake's C files and header, by name, in name order.
func sourceFiles() (map[string][]byte, []string, error) {
	entries, err := source.ReadDir("csrc")
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{}
	var names []string
	for _, e := range entries {
		data, err := source.ReadFile("csrc/" + e.Name())
		if err != nil {
			return nil, nil, err
		}
		files[e.Name()] = data
		names = append(names, e.Name())
	}
	return files, names, nil
}

// ccFlags are the compiler's flags, part of the cached library's key.
var ccFlags = []string{"-shared", "-fPIC", "-O2", "-g", "-pthread", "-fvisibility=hidden"}

// EnvPrebuilt names a prebuilt fake library to use instead of compiling one
// (the GPU machine's scripts carry one, since that machine has no Go).
const EnvPrebuilt = "GOCUDA_FAKECUDA"

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Lazy returns a dl.Lazy of table (name is the library's, for its
// errors) whose file is the fake driver, built first: the fake answers
// cuBLAS's, cuBLASLt's, cuRAND's, cuFFT's and NCCL's calls, so that the
// raw layers' tests (internal/lib) call through it. Its error is Build's.
func Lazy(name string, table *dl.Table) (*dl.Lazy, error) {
	path, err := Build()
	if err != nil {
		return nil, err
	}
	const env = "GOCUDA_FAKE_LIBRARY"
	return &dl.Lazy{
		Library: dl.Library{Name: name, Env: env},
		Table:   table,
		Env:     dl.Env{Getenv: func(k string) string { return map[string]string{env: path}[k] }, LookPath: func(string) (string, error) { return "", nil }},
	}, nil
}

// Build compiles the fake driver, once per process and once per source
// version on the machine, and returns the path of the shared library.
func Build() (string, error) {
	buildOnce.Do(func() { buildPath, buildErr = build() })
	return buildPath, buildErr
}

func build() (string, error) {
	if p := os.Getenv(EnvPrebuilt); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("fakecuda: %s: %w", EnvPrebuilt, err)
		}
		return p, nil
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	ccPath, err := exec.LookPath(cc)
	if err != nil {
		return "", fmt.Errorf("fakecuda: no C compiler (%s) to build the fake driver: install gcc or set CC: %w", cc, err)
	}
	files, names, err := sourceFiles()
	if err != nil {
		return "", fmt.Errorf("fakecuda: %w", err)
	}
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s %d\n", name, len(files[name]))
		h.Write(files[name])
	}
	h.Write([]byte(ccPath))
	fmt.Fprintf(h, "%q", ccFlags)
	sum := h.Sum(nil)
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "gocuda")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("fakecuda: %w", err)
	}
	out := filepath.Join(dir, "libfakecuda-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	return out, Compile(ccPath, out)
}

// Compile writes the fake driver's shared library to out with the C compiler
// cc. The result is renamed into place, so concurrent builds are safe.
func Compile(cc, out string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(out), "build-")
	if err != nil {
		return fmt.Errorf("fakecuda: %w", err)
	}
	defer os.RemoveAll(tmp)
	files, names, err := sourceFiles()
	if err != nil {
		return fmt.Errorf("fakecuda: %w", err)
	}
	lib := filepath.Join(tmp, "libfakecuda.so")
	// Only the functions marked EXPORT are the library's: the parts share
	// the rest among themselves.
	args := append([]string{"-o", lib}, ccFlags...)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(tmp, name), files[name], 0o644); err != nil {
			return fmt.Errorf("fakecuda: %w", err)
		}
		if strings.HasSuffix(name, ".c") {
			args = append(args, filepath.Join(tmp, name))
		}
	}
	cmd := exec.Command(cc, append(args, "-lm", "-ldl")...) // libm and libdl after the sources that need them (cublas.c, hostkernels.c)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("fakecuda: compiling the fake driver: %v\n%s", err, msg)
	}
	if err := os.Rename(lib, out); err != nil {
		return fmt.Errorf("fakecuda: %w", err)
	}
	return nil
}

// Control reaches the fake's test hooks.
type Control struct {
	fail, reset, live, calls, counts, countReset, pending, ipcSame uintptr
}

// Open returns the hooks of the fake library at path. When the library is
// already loaded (as the process's driver), the same instance is reached.
func Open(path string) (*Control, error) {
	h, err := dl.Load(path)
	if err != nil {
		return nil, fmt.Errorf("fakecuda: %w", err)
	}
	var c Control
	for name, p := range map[string]*uintptr{"fakecu_fail": &c.fail, "fakecu_reset_faults": &c.reset, "fakecu_live": &c.live, "fakecu_calls": &c.calls,
		"fakecu_counts": &c.counts, "fakecu_count_reset": &c.countReset, "fakecu_pending": &c.pending,
		"fakecu_ipc_same_process": &c.ipcSame} {
		if *p, err = dl.Sym(h, name); err != nil {
			return nil, fmt.Errorf("fakecuda: %s is not the fake driver: %w", path, err)
		}
	}
	return &c, nil
}

// Fail makes the nth call from now (1 is the next) of the driver function
// named (its exported name, such as "cuMemAlloc_v2") return code.
func (c *Control) Fail(function string, nth int, code int) {
	name := cstring(function)
	r, _, _ := purego.SyscallN(c.fail, uintptr(unsafe.Pointer(&name[0])), uintptr(nth), uintptr(code))
	if int32(r) != 0 {
		panic("fakecuda: fault table full")
	}
}

// SetIPCSameProcess has the fake open IPC memory handles in the process
// that exported them (the driver refuses: a test of an opened buffer's
// lifetime needs it, since the fake cannot share memory across processes).
func (c *Control) SetIPCSameProcess(on bool) {
	v := uintptr(0)
	if on {
		v = 1
	}
	purego.SyscallN(c.ipcSame, v)
}

// ResetFaults forgets every pending fault.
func (c *Control) ResetFaults() { purego.SyscallN(c.reset) }

// Live returns how many objects of a kind the fake holds: "device" and
// "host" allocations, "registered" host ranges, "stream", "event".
func (c *Control) Live(kind string) int {
	name := cstring(kind)
	r, _, _ := purego.SyscallN(c.live, uintptr(unsafe.Pointer(&name[0])))
	return int(int64(r))
}

// Calls returns how many calls of the fake's functions (CUDA's and NCCL's)
// were made so far, in this process.
func (c *Control) Calls() int64 {
	r, _, _ := purego.SyscallN(c.calls)
	return int64(r)
}

// Counts returns how often each function (CUDA's and NCCL's) was called
// since ResetCounts.
func (c *Control) Counts() map[string]int {
	buf := make([]byte, 1<<16)
	for {
		r, _, _ := purego.SyscallN(c.counts, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		if int(r) < len(buf) {
			buf = buf[:r]
			break
		}
		buf = make([]byte, 2*int(r))
	}
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(buf)), "\n") {
		var name string
		var n int
		if _, err := fmt.Sscanf(line, "%s %d", &name, &n); err == nil {
			counts[name] = n
		}
	}
	return counts
}

// Pending returns how many of the faults Fail asked for have not fired.
func (c *Control) Pending() int {
	r, _, _ := purego.SyscallN(c.pending)
	return int(int32(r))
}

// ResetCounts starts Counts from zero.
func (c *Control) ResetCounts() { purego.SyscallN(c.countReset) }

func cstring(s string) []byte { return append([]byte(s), 0) }
