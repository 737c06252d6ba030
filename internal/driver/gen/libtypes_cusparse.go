package main

// cuSPARSE's C types (cusparse.h), kept beside libTypes rather than in it
// so that each library's block is a file of its own: the handle and the
// descriptors are pointers to opaque structs, never Go memory (a const
// descriptor, such as cusparseConstSpMatDescr_t, is the same pointer and
// is written without Const in prototypes.txt); the rest are C
// enumerations (ints).
func init() {
	for c, t := range map[string]libType{
		"cusparseHandle_t":           {goType: "Handle", under: "uintptr"},
		"cusparseSpMatDescr_t":       {goType: "SpMatDescr", under: "uintptr"},
		"cusparseDnVecDescr_t":       {goType: "DnVecDescr", under: "uintptr"},
		"cusparseDnMatDescr_t":       {goType: "DnMatDescr", under: "uintptr"},
		"cusparseSpGEMMDescr_t":      {goType: "SpGEMMDescr", under: "uintptr"},
		"cusparseSpSVDescr_t":        {goType: "SpSVDescr", under: "uintptr"},
		"cusparseSpSMDescr_t":        {goType: "SpSMDescr", under: "uintptr"},
		"cusparseIndexType_t":        {goType: "int32"},
		"cusparseIndexBase_t":        {goType: "int32"},
		"cusparseOperation_t":        {goType: "int32"},
		"cusparseOrder_t":            {goType: "int32"},
		"cusparseSpMVAlg_t":          {goType: "int32"},
		"cusparseSpMMAlg_t":          {goType: "int32"},
		"cusparseSpGEMMAlg_t":        {goType: "int32"},
		"cusparseSpSVAlg_t":          {goType: "int32"},
		"cusparseSpSMAlg_t":          {goType: "int32"},
		"cusparseSparseToDenseAlg_t": {goType: "int32"},
		"cusparseDenseToSparseAlg_t": {goType: "int32"},
		"cusparseSpMatAttribute_t":   {goType: "int32"},
		"cusparseAction_t":           {goType: "int32"},
		"cusparseCsr2CscAlg_t":       {goType: "int32"},
	} {
		libTypes[c] = t
	}
}
