package cusolver

import (
	"errors"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
)

// TestInfoMeaning: gels' info in words: -1 to -13 an argument, below that
// the negative of an IRS status (-30 a singular R, as the real cuSOLVER
// writes for a matrix without full column rank), above 0 a zero R(i,i).
func TestInfoMeaning(t *testing.T) {
	for _, tt := range []struct {
		kind  infoKind
		v     int32
		want  string
		is    error
		code  Result
		count int
	}{
		{infoRank, -30, "R is singular: the matrix lacks full column rank", ErrSingular, ResultIRSMatrixSingular, 1},
		{infoRank, -30, "matrix 2: R is singular", ErrSingular, ResultIRSMatrixSingular, 3},
		{infoRank, -21, "does not support", cuda.ErrNotSupported, ResultIRSNotSupported, 1},
		{infoRank, -23, "does not support", cuda.ErrNotSupported, ResultIRSNrhsNotSupportedForRefineGMRES, 1},
		{infoRank, -22, "refused its arguments", cuda.ErrInvalidValue, ResultIRSOutOfRange, 1},
		{infoRank, -31, "refused its arguments", cuda.ErrInvalidValue, ResultInvalidWorkspace, 1},
		{infoRank, -20, "failed (info -20)", nil, ResultIRSInternalError, 1},
		{infoRank, -13, "refused argument 13", cuda.ErrInvalidValue, 0, 1},
		{infoRank, 2, "R(2,2) is exactly zero", ErrSingular, 0, 1},
		{infoPivot, -30, "refused argument 30", cuda.ErrInvalidValue, 0, 1},
	} {
		i := &Info{op: "Op", kind: tt.kind, count: tt.count}
		err := i.meaning(2, tt.v)
		if !strings.Contains(err.Error(), tt.want) || tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("kind %d, info %d: %v, want %q matching %v", tt.kind, tt.v, err, tt.want, tt.is)
		}
		if e := (*Error)(nil); !errors.As(err, &e) || e.Code != tt.code || tt.code != 0 && !errors.Is(err, tt.code) {
			t.Errorf("kind %d, info %d: %#v, want code %v", tt.kind, tt.v, err, tt.code)
		}
	}
}
