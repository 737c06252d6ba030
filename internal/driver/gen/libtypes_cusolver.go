package main

// cuSOLVER's C types (cusolverDn.h, cusolver_common.h), kept beside
// libTypes rather than in it so that each library's block is a file of its
// own: the handle, the 64-bit API's parameters and the Jacobi methods'
// settings are pointers to opaque structs, never Go memory; the modes are
// C enumerations (ints); signed char is gesvd's job letters ('A', 'S',
// 'O', 'N'); cusolver_int_t, the IRS solvers' int, is int; the complex
// elements are only pointed to (device memory, here).
func init() {
	for c, t := range map[string]libType{
		"cusolverDnHandle_t": {goType: "Handle", under: "uintptr"},
		"cusolverDnParams_t": {goType: "Params", under: "uintptr"},
		"gesvdjInfo_t":       {goType: "GesvdjInfo", under: "uintptr"},
		"syevjInfo_t":        {goType: "SyevjInfo", under: "uintptr"},
		"cusolverEigMode_t":  {goType: "int32"},
		"cublasFillMode_t":   {goType: "int32"},
		"cublasSideMode_t":   {goType: "int32"},
		"signed char":        {goType: "int8"},
		"cusolver_int_t":     {goType: "int32"},
		"cuComplex":          {goType: "complex64", noVal: true},
		"cuDoubleComplex":    {goType: "complex128", noVal: true},
	} {
		libTypes[c] = t
	}
}
