package main

// cuDNN's C types (cuDNN 9's cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h),
// kept beside libTypes rather than in it so that each library's block is
// a file of its own: the handle and the descriptors are pointers to opaque
// structs, never Go memory; the algorithms' performance results are
// structs cuDNN fills, laid out as the header declares them (algo, status,
// time, memory, determinism, mathType, reserved[3]: 48 bytes on 64-bit
// systems); the rest are C enumerations (ints).
func init() {
	const perf = "struct {\nAlgo int32\nStatus int32\nTime float32\nMemory uintptr\nDeterminism int32\nMathType int32\nReserved [3]int32\n}"
	for c, t := range map[string]libType{
		"cudnnHandle_t":                       {goType: "Handle", under: "uintptr"},
		"cudnnTensorDescriptor_t":             {goType: "TensorDescriptor", under: "uintptr"},
		"cudnnFilterDescriptor_t":             {goType: "FilterDescriptor", under: "uintptr"},
		"cudnnConvolutionDescriptor_t":        {goType: "ConvolutionDescriptor", under: "uintptr"},
		"cudnnActivationDescriptor_t":         {goType: "ActivationDescriptor", under: "uintptr"},
		"cudnnPoolingDescriptor_t":            {goType: "PoolingDescriptor", under: "uintptr"},
		"cudnnConvolutionFwdAlgoPerf_t":       {goType: "FwdAlgoPerf", under: perf, noVal: true},
		"cudnnConvolutionBwdDataAlgoPerf_t":   {goType: "BwdDataAlgoPerf", under: perf, noVal: true},
		"cudnnConvolutionBwdFilterAlgoPerf_t": {goType: "BwdFilterAlgoPerf", under: perf, noVal: true},
		"cudnnTensorFormat_t":                 {goType: "int32"},
		"cudnnDataType_t":                     {goType: "int32"},
		"cudnnConvolutionMode_t":              {goType: "int32"},
		"cudnnMathType_t":                     {goType: "int32"},
		"cudnnConvolutionFwdAlgo_t":           {goType: "int32"},
		"cudnnConvolutionBwdDataAlgo_t":       {goType: "int32"},
		"cudnnConvolutionBwdFilterAlgo_t":     {goType: "int32"},
		"cudnnActivationMode_t":               {goType: "int32"},
		"cudnnNanPropagation_t":               {goType: "int32"},
		"cudnnPoolingMode_t":                  {goType: "int32"},
		"cudnnBatchNormMode_t":                {goType: "int32"},
		// The backend API: a descriptor is a pointer to an opaque struct,
		// never Go memory; its type, the attributes' names and types are
		// C enumerations.
		"cudnnBackendDescriptor_t":     {goType: "BackendDescriptor", under: "uintptr"},
		"cudnnBackendDescriptorType_t": {goType: "int32"},
		"cudnnBackendAttributeName_t":  {goType: "int32"},
		"cudnnBackendAttributeType_t":  {goType: "int32"},
	} {
		libTypes[c] = t
	}
}
