// Package cusolver factors matrices and solves dense linear systems on
// gocuda's DeviceBuffers with NVIDIA's cuSOLVER (its dense part,
// cusolverDn), opened at run time like the driver: nothing is needed to
// build, and the library only where a Handle is made.
//
// # Operations
//
// LU factors a square matrix with partial pivoting (getrf) and Solve
// solves with its factors (getrs); Cholesky factors a symmetric positive
// definite matrix (potrf), CholeskySolve solves with it (potrs) and
// CholeskyInverse inverts it (potri); QR factors a matrix into Householder
// reflectors and R (geqrf), QRQ forms Q (orgqr, ungqr), ApplyQ multiplies
// by Q or Qᵀ (ormqr, unmqr), LeastSquares solves min ||A·X - B|| (gels,
// QR-based); SVD computes singular values and vectors (gesvd) and Eigh the
// eigenvalues and vectors of a symmetric or Hermitian matrix (syevd). For
// many small matrices (at most 32×32) CholeskyBatched (potrfBatched),
// SVDBatched (gesvdjBatched, Jacobi) and EighBatched (syevjBatched,
// heevjBatched) do a whole batch in one call. The 64-bit API
// (cusolverDnX*) is used where cuSOLVER has one: getrf, getrs, potrf,
// potrs, geqrf, gesvd, syevd.
//
// Elements are float32, float64, complex64 and complex128 (Element), in
// every operation: for complex matrices Cholesky's, CholeskyBatched's,
// Eigh's and EighBatched's are Hermitian, QR's Q unitary (ApplyQ's
// transpose is then Qᴴ), SVD's and SVDBatched's A = U·S·Vᴴ (SVD's vt
// receives Vᴴ, SVDBatched's v V). Singular values and eigenvalues are real
// whatever the matrix: the s of SVD and SVDBatched and the w of Eigh and
// EighBatched hold float32 for float32 and complex64 matrices, float64
// for float64 and complex128 ones (their type parameter R, checked when
// called, the error naming the type wanted). The complex forms are
// cuSOLVER's C and Z functions (the 64-bit API's complex data types where
// it has the call; potri, potrfBatched, gesvdjBatched, heevjBatched, ungqr,
// unmqr and the CCgels and ZZgels least-squares solvers where not).
//
// A problem with no elements (a 0×0 matrix; QR, LeastSquares and, for
// the values alone, SVD of no rows or no columns; no right-hand sides) is
// nothing to do, as LAPACK's quick returns: the calls return without
// asking cuSOLVER, empty buffers will do, and the results' Err is nil. So
// is a batch of no matrices.
//
// The calls keep LAPACK's order of arguments, as package cublas keeps
// BLAS's: the matrix first (which most of them overwrite), what it yields
// after (SVD's s, u and vt; LeastSquares' x after b).
//
// # Layout
//
// A Matrix is packed, row-major by default (Go's order) or column-major
// (Layout ColMajor, cuSOLVER's and LAPACK's). cuSOLVER reads memory
// column-major: the memory of a row-major A is, to cuSOLVER, Aᵀ. Nothing
// is copied or transposed; each operation says what that means for it:
//
//   - LU and Solve: cuSOLVER factors Aᵀ (P·Aᵀ = L·U) and Solve asks it to
//     solve with the transpose of what it factored (CUBLAS_OP_T), which is
//     A: the solution is A's, for either layout. The factors left in a's
//     memory are those of the matrix cuSOLVER saw (Aᵀ for a row-major a).
//   - Cholesky, CholeskySolve, CholeskyInverse, Eigh: a symmetric matrix
//     is its own transpose, so the layout does not matter, only which
//     triangle is read and written: the lower triangle of a row-major
//     matrix is the upper one of its memory read column-major, so the
//     package passes cuSOLVER the other fill mode. Cholesky(h, a, Lower)
//     leaves L (A = L·Lᵀ) in a's lower triangle, as a's layout reads it,
//     and does not touch the other triangle. CholeskyBatched's cuSOLVER
//     batch is fast in one triangle only, its column-major lower one (a
//     row-major Upper, a column-major Lower); a batch in the other
//     triangle has that triangle transposed into the workspace and the
//     factor back (a kernel of the package's own), two copies of the
//     triangles instead of cuSOLVER's slow triangle (about 2.8 times
//     slower). A complex
//     Hermitian A's row-major memory is, to cuSOLVER, Aᵀ = conj(A), whose factor and
//     inverse read row-major are A's; its solve is not, so CholeskySolve
//     takes a complex matrix column-major only.
//   - Right-hand sides (Solve, CholeskySolve) are nrhs vectors of n
//     elements each, one after another in the buffer: B column-major, or
//     equivalently the rows of a row-major nrhs×n matrix (Bᵀ). One vector
//     is just that vector.
//   - SVD: of a row-major A's memory cuSOLVER computes Aᵀ = U'·S·V'ᵀ, so
//     A = V'·S·U'ᵀ: the package hands cuSOLVER the caller's vt as its U
//     and the caller's u as its Vᵀ, and U and Vᵀ come out exactly, in a's
//     layout. cuSOLVER's gesvd takes only
//     matrices with at least as many rows as columns, as it sees them:
//     so a row-major a must be wide or square (Rows <= Cols) and a
//     column-major one tall or square (Rows >= Cols); for the other
//     shape, take the SVD of the transpose (swap U and Vᵀ) or store the
//     matrix in the other layout.
//   - QR, QRQ, ApplyQ, LeastSquares: Householder QR of A needs A
//     column-major (of a row-major matrix, cuSOLVER would factor Aᵀ,
//     which is A's LQ, not its QR). They take column-major matrices and
//     refuse row-major ones.
//   - Eigenvectors (Eigh, EighBatched) and the batched SVD's singular
//     vectors come out each contiguous: vector i at elements i·n to
//     (i+1)·n of its matrix, that is V column-major (or Vᵀ row-major).
//     For a complex Hermitian A, whose row-major memory cuSOLVER reads as
//     conj(A), the row-major reading is Vᴴ: A = V·Λ·Vᴴ either way. The
//     batched SVD of a row-major complex batch likewise leaves conj(U)
//     and conj(V) contiguous (Uᴴ and Vᴴ read row-major).
//   - Complex SVD: the row-major memory of A is Aᵀ to cuSOLVER (not Aᴴ),
//     and the outputs swapped as for real matrices read row-major as U
//     and Vᴴ exactly.
//
// # Info: singular and not positive definite matrices
//
// cuSOLVER reports what it found in the data (a zero pivot, a leading
// minor that is not positive definite, an SVD or eigensolver that did not
// converge) in an info value it writes on the device, after the call has
// returned. Reading it needs the stream to reach that point: the package
// never waits for it unasked. Each call whose info can say something of
// the data returns what holds it (an *LUFactors, a *CholeskyFactor, or an
// *Info), whose Err method waits for the handle's stream
// (Stream.Synchronize), reads the info and says what it means: nil, or an
// error matching ErrSingular ("cusolver: LU: the matrix is singular: pivot
// 3 is exactly zero (U(3,3), 1-based)"), ErrNotPositiveDefinite ("...: the
// leading minor of order 3 is not positive definite") or ErrNoConvergence;
// in a batch, each matrix counted from 0. Err reads once and remembers.
// A caller who will not ask frees the info unread (Free), in stream order
// as the rest. The other calls' info only numbers a bad argument, which
// the package checks before calling. Errors in the arguments (shapes,
// buffers, contexts) are returned at once, by the call, without waiting.
//
// # Handles and workspaces
//
// A Handle is made for one Stream and queues all its work there, as the
// library binds one (cusolverDnSetStream); make one per stream to work on
// several. It keeps the device workspace cuSOLVER asks for, grown when a
// call needs more (the old one freed in stream order, the new one
// allocated so: cuda.AllocAsync), and the host workspace some calls ask
// for (page-locked), and reuses them across calls. The results' info and
// pivots are stream-ordered memory too, freed on the stream by Err or
// Free, whose memory the stream keeps for the next call's: a loop of
// factorizations that reads or frees each result allocates nothing the
// driver sees after the first. A Handle is safe for use by
// many goroutines: its calls take turns. Capturing its calls into a CUDA
// graph is not supported (untested: some of cuSOLVER's calls use host
// memory or wait for the device while they run, and Err synchronizes).
//
// # The library
//
// The library is looked for as libcusolver.so.12, libcusolver.so.11 and
// libcusolver.so on the loader's path, in /usr/local/cuda, and in the
// folders of NVIDIA's Python wheels (nvidia/cu13, nvidia/cusolver);
// GOCUDA_LIBCUSOLVER names another file. cuSOLVER needs cuBLAS, cuBLASLt,
// cuSPARSE and nvJitLink: where the dynamic loader does not find one by
// itself (the wheels keep each library in a folder of its own), the
// package loads it first from the same places, as PyTorch does; where
// none is found, opening fails and the error names the library missing.
package cusolver

//go:generate go run ../internal/driver/gen -in ../internal/lib/cusolver/status.txt -backend lib-public -pkg cusolver -out zstatus.go

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/dl"
	clib "github.com/gocuda/cuda/internal/lib/cusolver"
)

// EnvLibrary is the environment variable that names the cuSOLVER library
// to open.
const EnvLibrary = "GOCUDA_LIBCUSOLVER"

// lib is cuSOLVER, opened once per process by the first call that needs
// it, with the functions of internal/lib/cusolver: a file that lacks one of
// the required ones is not cuSOLVER, and the others fail only their own
// calls.
var lib = dl.Lazy{
	Library: dl.Library{
		Name:    "cuSOLVER",
		Env:     EnvLibrary,
		Sonames: []string{"libcusolver.so.12", "libcusolver.so.11", "libcusolver.so"},
		DLLs:    []string{"cusolver64_12.dll", "cusolver64_11.dll"},
		Wheels:  []string{"cu13/lib", "cusolver/lib"},
		Install: "install the CUDA toolkit's cuSOLVER (libcusolver), or pip install nvidia-cusolver",
		Missing: cuda.ErrNotSupported,
	},
	Table: clib.Table,
}

// Library returns the path of the cuSOLVER library opened, or why none
// could be.
func Library() (string, error) {
	preloadDeps()
	return lib.Path(), open("Library")
}

// Version returns cuSOLVER's version, such as 11.7.1 (cusolverGetProperty:
// no handle, no context needed).
func Version() (cuda.Version, error) {
	const op = "Version"
	preloadDeps()
	if err := open(op); err != nil {
		return cuda.Version{}, err
	}
	var v [3]int32 // libraryPropertyType: MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
	for i := range v {
		if err := check(op, "cusolverGetProperty", clib.GetProperty(int32(i), &v[i])); err != nil {
			return cuda.Version{}, err
		}
	}
	return cuda.Version{Major: int(v[0]), Minor: int(v[1]), Patch: int(v[2])}, nil
}
