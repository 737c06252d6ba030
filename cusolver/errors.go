package cusolver

import (
	"errors"
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/closed"
)

// What cuSOLVER found in the data, as the info value it writes says: the
// errors an Err returns match one of these (errors.Is).
var (
	// ErrSingular: LU found a pivot exactly zero (U(i,i) = 0), or
	// LeastSquares a singular R (a matrix without full column rank); LU's
	// factors are complete, but solving with them divides by zero.
	ErrSingular = errors.New("the matrix is singular")
	// ErrNotPositiveDefinite: Cholesky found a leading minor that is
	// not positive definite (or CholeskyInverse a zero on the factor's
	// diagonal); the factor is complete only up to it.
	ErrNotPositiveDefinite = errors.New("the matrix is not positive definite")
	// ErrNoConvergence: the SVD or the eigensolver did not converge.
	ErrNoConvergence = errors.New("the algorithm did not converge")
)

// sentinels are the gocuda sentinels cuSOLVER's codes match.
var sentinels = map[Result]error{
	ResultInvalidValue:           cuda.ErrInvalidValue,
	ResultInvalidWorkspace:       cuda.ErrInvalidValue,
	ResultAllocFailed:            cuda.ErrOutOfMemory,
	ResultArchMismatch:           cuda.ErrNotSupported,
	ResultNotSupported:           cuda.ErrNotSupported,
	ResultMatrixTypeNotSupported: cuda.ErrNotSupported,
}

// errorf returns an error of ours, not the library's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}

// closedArg returns op's error for b, named name, where it is closed (see
// package closed), else nil (for a nil b too): an overlap check asks it of
// the buffers it found overlapping, before it reports the overlap.
func closedArg[T any](op, name string, b *cuda.DeviceBuffer[T]) error {
	if closed.Buffer(b) {
		return &Error{Op: op, Err: cuda.ErrClosed, Detail: name + " is closed (freed, or its context closed)"}
	}
	return nil
}
