package errfmt

import (
	"errors"
	"testing"
)

func TestMessage(t *testing.T) {
	sentinel := errors.New("invalid value")
	for _, tt := range []struct {
		name, lib, op, call, code, detail string
		sentinel                          error
		want                              string
	}{
		{"library error", "cuda", "Alloc", "cuMemAlloc_v2", "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", "", sentinel, "cuda: Alloc: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"},
		{"library error with detail", "nccl", "AllReduce", "ncclAllReduce", "invalid usage (ncclInvalidUsage)", "rank 1", nil, "nccl: AllReduce: ncclAllReduce: invalid usage (ncclInvalidUsage): rank 1"},
		{"ours", "nvrtc", "Compile", "", "", "empty source", sentinel, "nvrtc: Compile: invalid value: empty source"},
		{"bare", "cuda", "Op", "", "", "", nil, "cuda: Op"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Message(tt.lib, tt.op, tt.call, tt.code, tt.sentinel, tt.detail); got != tt.want {
				t.Errorf("Message = %q, want %q", got, tt.want)
			}
		})
	}
}
