package main

// cuBLASLt's matrix transform (cublasLt.h), for package cusolver's batched
// transposes, kept beside libTypes as libtypes_cusolver.go is: the
// descriptor is a pointer to an opaque struct, never Go memory; the
// attribute names are C enumerations (ints).
func init() {
	for c, t := range map[string]libType{
		"cublasLtMatrixTransformDesc_t":           {goType: "LtMatrixTransformDesc", under: "uintptr"},
		"cublasLtMatrixTransformDescAttributes_t": {goType: "int32"},
		"cublasLtMatrixLayoutAttribute_t":         {goType: "int32"},
	} {
		libTypes[c] = t
	}
}
