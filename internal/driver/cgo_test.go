//go:build cgo && !gocuda_purego

package driver

import "testing"

const wantBackend = "cgo"

// TestShimStatus: a failure to bind the context names the binding call and
// the call it was for; any other result is the call's own.
func TestShimStatus(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    int32
		want Status
	}{
		{"success", 0, Status{Code: Success, Func: FuncMemAlloc}},
		{"call failed", 2, Status{Code: ErrorOutOfMemory, Func: FuncMemAlloc}},
		{"get failed", 201 | bindGetFailed, Status{Code: ErrorInvalidContext, Func: FuncCtxGetCurrent, For: FuncMemAlloc}},
		{"set failed", 999 | bindSetFailed, Status{Code: ErrorUnknown, Func: FuncCtxSetCurrent, For: FuncMemAlloc}},
		{"negative", -1, Status{Code: -1, Func: FuncMemAlloc}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := shimStatus(tt.r, FuncMemAlloc); got != tt.want {
				t.Errorf("shimStatus(%#x) = %+v, want %+v", tt.r, got, tt.want)
			}
		})
	}
}
