package cusolver

import (
	"path/filepath"
	"regexp"
	"runtime"
	"sync"

	"github.com/gocuda/cuda/internal/dl"
)

// cuSOLVER is linked against cuBLAS, cuBLASLt, cuSPARSE and nvJitLink,
// which the dynamic loader looks for by name: beside it in the toolkit's
// folder (where that folder is on the loader's path, or cuSOLVER's own
// search path names it) or in a wheel of its own (nvidia/cublas/lib,
// nvidia/cusparse/lib, nvidia/nvjitlink/lib), where the loader does not
// look. So before cuSOLVER is opened, each candidate that fails to load
// for want of such a library has it loaded first, from the folders the
// package looks in for cuSOLVER itself (as PyTorch preloads them), and is
// tried again. A dependency once loaded is found by name for the rest of
// the process.

// depWheels are the wheels' folders (under nvidia/) a dependency may be in.
var depWheels = []string{"cu13/lib", "cu12/lib", "cublas/lib", "cusparse/lib", "nvjitlink/lib", "cusolver/lib", "cuda_runtime/lib"}

// missingDep matches the loader's message for a library it could not find.
// A missing file itself is named by the path asked for instead, which
// loadWithDeps tells apart.
var missingDep = regexp.MustCompile(`^(lib[\w.+-]+\.so[\d.]*): cannot open shared object file`)

var preloadOnce sync.Once

// preloadDeps loads what cuSOLVER's candidates need, once per process
// (see above); a candidate that loads, or fails for another reason, ends
// the search, and lib.Open then tries the candidates itself.
func preloadDeps() {
	preloadOnce.Do(func() {
		if runtime.GOOS == "windows" {
			return
		}
		preloadFor(dl.ProcessEnv(), lib.Library)
	})
}

// preloadFor tries target's candidates in order, loading the
// dependencies a candidate lacks (found as target's own are, in
// depWheels' folders) until one loads; it returns whether one did. The
// loaded files stay loaded.
func preloadFor(env dl.Env, target dl.Library) bool {
	for _, path := range target.Candidates(env) {
		if loadWithDeps(env, path, 0) {
			return true
		}
	}
	return false
}

// loadWithDeps loads path, first loading (to depth 4) each library the
// loader says it lacks, and reports whether path loaded.
func loadWithDeps(env dl.Env, path string, depth int) bool {
	for range 8 {
		h, err := dl.Load(path)
		if err == nil {
			_ = h // kept loaded: lib.Open loads it again by the same path
			return true
		}
		m := missingDep.FindStringSubmatch(err.Error())
		if m == nil || m[1] == filepath.Base(path) || depth >= 4 {
			return false
		}
		dep := dl.Library{Name: m[1], Sonames: []string{m[1]}, Wheels: depWheels}
		found := false
		for _, p := range dep.Candidates(env) {
			if p == m[1] {
				continue // by name: what just failed
			}
			if loadWithDeps(env, p, depth+1) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return false
}
