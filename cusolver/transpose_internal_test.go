package cusolver

import "testing"

// TestLtSonames: the cuBLASLt of cuSOLVER's own CUDA generation first
// (cuSOLVER 11 is CUDA 12's, linked against libcublasLt.so.12; cuSOLVER 12
// CUDA 13's), so that the transposes call the library cuSOLVER loaded.
func TestLtSonames(t *testing.T) {
	for _, tt := range []struct{ solver, so, dll string }{
		{"/usr/local/cuda/lib64/libcusolver.so.11", "libcublasLt.so.12", "cublasLt64_12.dll"},
		{"libcusolver.so.12", "libcublasLt.so.13", "cublasLt64_13.dll"},
		{`C:\CUDA\bin\cusolver64_11.dll`, "libcublasLt.so.12", "cublasLt64_12.dll"},
		{"/x/nvidia/cu13/lib/libcusolver.so.12", "libcublasLt.so.13", "cublasLt64_13.dll"},
		{"", "libcublasLt.so.13", "cublasLt64_13.dll"},
	} {
		so, dlls := ltSonames(tt.solver)
		if so[0] != tt.so || dlls[0] != tt.dll || len(so) != 3 || so[2] != "libcublasLt.so" {
			t.Errorf("ltSonames(%q) = %v, %v: want %s and %s first", tt.solver, so, dlls, tt.so, tt.dll)
		}
	}
}
