package cudnn

import (
	"fmt"

	cuda "github.com/gocuda/cuda"
)

// sentinels are the gocuda sentinels cuDNN's codes match: the bad
// parameters (2xxx) cuda.ErrInvalidValue, what is not supported (3xxx)
// cuda.ErrNotSupported, the failed allocations cuda.ErrOutOfMemory.
var sentinels = map[Result]error{
	ResultBadParam:                               cuda.ErrInvalidValue,
	ResultInvalidValue:                           cuda.ErrInvalidValue,
	ResultBadParamNullPointer:                    cuda.ErrInvalidValue,
	ResultBadParamMisalignedPointer:              cuda.ErrInvalidValue,
	ResultBadParamNotFinalized:                   cuda.ErrInvalidValue,
	ResultBadParamOutOfBound:                     cuda.ErrInvalidValue,
	ResultBadParamSizeInsufficient:               cuda.ErrInvalidValue,
	ResultBadParamStreamMismatch:                 cuda.ErrInvalidValue,
	ResultBadParamShapeMismatch:                  cuda.ErrInvalidValue,
	ResultBadParamDuplicatedEntries:              cuda.ErrInvalidValue,
	ResultBadParamAttributeType:                  cuda.ErrInvalidValue,
	ResultBadParamCUDAGraphMismatch:              cuda.ErrInvalidValue,
	ResultBadParamDescriptorType:                 cuda.ErrInvalidValue,
	ResultNotSupported:                           cuda.ErrNotSupported,
	ResultNotSupportedGraphPattern:               cuda.ErrNotSupported,
	ResultNotSupportedShape:                      cuda.ErrNotSupported,
	ResultNotSupportedDataType:                   cuda.ErrNotSupported,
	ResultNotSupportedLayout:                     cuda.ErrNotSupported,
	ResultNotSupportedIncompatibleCUDADriver:     cuda.ErrNotSupported,
	ResultNotSupportedIncompatibleCUDART:         cuda.ErrNotSupported,
	ResultNotSupportedArchMismatch:               cuda.ErrNotSupported,
	ResultNotSupportedRuntimePrerequisiteMissing: cuda.ErrNotSupported,
	ResultNotSupportedSublibraryUnavailable:      cuda.ErrNotSupported,
	ResultNotSupportedSharedMemoryInsufficient:   cuda.ErrNotSupported,
	ResultNotSupportedPadding:                    cuda.ErrNotSupported,
	ResultNotSupportedBadLaunchParam:             cuda.ErrNotSupported,
	ResultNotSupportedCUDAGraphNativeAPI:         cuda.ErrNotSupported,
	ResultInternalErrorHostAllocationFailed:      cuda.ErrOutOfMemory,
	ResultInternalErrorDeviceAllocationFailed:    cuda.ErrOutOfMemory,
}

// errorf returns an error of ours, not the library's, matching sentinel.
func errorf(op string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, Err: sentinel, Detail: fmt.Sprintf(format, args...)}
}
