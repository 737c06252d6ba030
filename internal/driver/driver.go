// Package driver is gocuda's raw layer over the CUDA driver API: one Go
// function per C function, generated from prototypes.txt, calling into
// libcuda opened at run time. It knows nothing of contexts on threads, Go
// types or errors; package cuda builds those on top.
//
// It and the packages over the optional libraries (internal/dl, nccl,
// nvrtc, internal/nvml, and internal/fakecuda for the tests) call purego;
// package cuda never does.
package driver

//go:generate go run ./gen -in prototypes.txt -backend syms -out zsyms.go
//go:generate go run ./gen -in prototypes.txt -backend purego -out zcalls_purego.go
//go:generate go run ./gen -in prototypes.txt -backend cgo -out zcalls_cgo.go
//go:generate go run ./gen -in enums.txt -backend enums -pkg driver -out zenums.go

import (
	"sync"
	"unsafe"
)

// Result is a CUresult.
type Result int32

// ResultMissingSymbol is not a driver code: the loaded library lacks the
// function called, or no library is loaded. (The driver's codes are in
// zenums.go, generated from enums.txt.)
const ResultMissingSymbol Result = -1

// Status is what a call returned: the driver's result and the function
// that returned it. Each generated function fills Func itself, so an error
// built from a Status names the call that failed.
type Status struct {
	Code Result
	Func Func
	// For is, when Func made the context current for another call and
	// failed (the cgo shim binds before it calls), that other call; else 0.
	For Func
}

// OK reports whether the call succeeded.
func (s Status) OK() bool { return s.Code == Success }

// Func names a driver function gocuda calls (zsyms.go); 0 names none.
type Func uint16

// String returns the function's C name, such as "cuMemAlloc_v2".
func (f Func) String() string {
	if f == 0 || int(f) > len(symNames) {
		return ""
	}
	return symNames[f-1]
}

// Handle types, as the driver defines them.
type (
	Device            int32   // CUdevice
	DeviceAttribute   int32   // CUdevice_attribute
	Context           uintptr // CUcontext
	Stream            uintptr // CUstream
	Event             uintptr // CUevent
	DevicePtr         uint64  // CUdeviceptr
	Module            uintptr // CUmodule
	Function          uintptr // CUfunction
	JITOption         int32   // CUjit_option
	FunctionAttribute int32   // CUfunction_attribute
	MemPool           uintptr // CUmemoryPool
	MemPoolAttribute  int32   // CUmemPool_attribute
	Graph             uintptr // CUgraph
	GraphExec         uintptr // CUgraphExec
	GraphNode         uintptr // CUgraphNode
	Library           uintptr // CUlibrary
	Kernel            uintptr // CUkernel
	LinkState         uintptr // CUlinkState
)

// GraphExecUpdateResultInfo is CUgraphExecUpdateResultInfo.
type GraphExecUpdateResultInfo struct {
	Result        int32 // CUgraphExecUpdateResult
	_             int32
	ErrorNode     GraphNode
	ErrorFromNode GraphNode
}

// Graph constants.
const (
	StreamCaptureStatusNone   = 0 // CU_STREAM_CAPTURE_STATUS_NONE
	StreamCaptureStatusActive = 1 // CU_STREAM_CAPTURE_STATUS_ACTIVE
	GraphDebugDotFlagsVerbose = 1 // CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE
)

// MemPoolProps is the leading part of CUmemPoolProps gocuda sets, and room
// for the rest, which stays zero: 88 bytes in every CUDA from 11.2.
type MemPoolProps struct {
	AllocType   int32 // CU_MEM_ALLOCATION_TYPE_PINNED
	HandleTypes int32 // CU_MEM_HANDLE_TYPE_NONE
	LocType     int32 // CU_MEM_LOCATION_TYPE_DEVICE
	LocID       int32 // the device ordinal
	_           [72]byte
}

// MemAccessDesc is CUmemAccessDesc.
type MemAccessDesc struct {
	LocType int32 // CU_MEM_LOCATION_TYPE_DEVICE
	LocID   int32
	Flags   int32 // CU_MEM_ACCESS_FLAGS_PROT_*
}

// Memory pool constants.
const (
	MemAllocationTypePinned   = 1 // CU_MEM_ALLOCATION_TYPE_PINNED
	MemLocationTypeDevice     = 1 // CU_MEM_LOCATION_TYPE_DEVICE
	MemAccessProtNone         = 0 // CU_MEM_ACCESS_FLAGS_PROT_NONE
	MemAccessProtRead         = 1 // CU_MEM_ACCESS_FLAGS_PROT_READ
	MemAccessProtReadWrite    = 3 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
	MemPoolAttrReleaseThresh  = 4 // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
	MemPoolAttrReservedMemCur = 5 // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
	MemPoolAttrReservedMemHi  = 6 // CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH
	MemPoolAttrUsedMemCur     = 7 // CU_MEMPOOL_ATTR_USED_MEM_CURRENT
	MemPoolAttrUsedMemHi      = 8 // CU_MEMPOOL_ATTR_USED_MEM_HIGH
)

// Flags used by the layers above.
const (
	StreamNonBlocking          = 0x1 // CU_STREAM_NON_BLOCKING
	EventDefault               = 0x0 // CU_EVENT_DEFAULT
	EventBlockingSync          = 0x1 // CU_EVENT_BLOCKING_SYNC
	EventDisableTiming         = 0x2 // CU_EVENT_DISABLE_TIMING
	EventInterprocess          = 0x4 // CU_EVENT_INTERPROCESS
	IpcMemLazyEnablePeerAccess = 0x1 // CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
	MemHostAllocPortable       = 0x1 // CU_MEMHOSTALLOC_PORTABLE
	MemHostRegisterPortable    = 0x1 // CU_MEMHOSTREGISTER_PORTABLE
)

// syms holds the resolved address of each function in symNames; zero where
// the library lacks it. Written once, by Open.
var syms [symCount]uintptr

// call holds one call's arguments and out-parameters (its fields are the
// backend's: backend_purego.go, backend_cgo.go). It lives on the heap and is
// reused, so that a caller's out variable never has to escape.
var calls = sync.Pool{New: func() any { return new(call) }}

func getCall() *call { return calls.Get().(*call) }

func putCall(c *call) {
	*c = call{}
	calls.Put(c)
}

// GoString copies a NUL-terminated C string.
func GoString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// ErrorName returns the driver's name for r ("CUDA_ERROR_OUT_OF_MEMORY") and
// its description, or empty strings where the driver does not know r.
func ErrorName(r Result) (name, text string) {
	var p *byte
	if GetErrorName(r, &p).OK() {
		name = GoString(p)
	}
	p = nil
	if GetErrorString(r, &p).OK() {
		text = GoString(p)
	}
	return name, text
}

// LaunchConfig is CUlaunchConfig. Attrs is the address of an array of
// NumAttrs LaunchAttribute, as a number: the caller keeps the array where
// it does not move (the heap) until the call returns, and no Go pointer
// is in memory the driver reads.
type LaunchConfig struct {
	GridDimX, GridDimY, GridDimZ    uint32
	BlockDimX, BlockDimY, BlockDimZ uint32
	SharedMemBytes                  uint32
	_                               uint32
	Stream                          Stream
	Attrs                           uintptr
	NumAttrs                        uint32
	_                               uint32
}

// LaunchAttribute is CUlaunchAttribute: an id and a 64-byte union of
// values, of which gocuda writes the leading 32-bit words.
type LaunchAttribute struct {
	ID    int32
	_     int32
	Value [16]uint32
}

// Launch attributes (CUlaunchAttributeID) and cluster scheduling policies.
const (
	LaunchAttributeCooperative                     = 2 // CU_LAUNCH_ATTRIBUTE_COOPERATIVE
	LaunchAttributeClusterDimension                = 4 // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
	LaunchAttributeClusterSchedulingPolicy         = 5 // CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE
	LaunchAttributeProgrammaticStreamSerialization = 6 // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
	LaunchAttributePriority                        = 8 // CU_LAUNCH_ATTRIBUTE_PRIORITY
)

// MemAllocationProp is CUmemAllocationProp (32 bytes): pinned device
// memory of one device, with the handle types it may be exported as.
type MemAllocationProp struct {
	Type        int32 // CU_MEM_ALLOCATION_TYPE_PINNED
	HandleTypes int32 // CU_MEM_HANDLE_TYPE_*
	LocType     int32 // CU_MEM_LOCATION_TYPE_DEVICE
	LocID       int32 // the device ordinal
	_           uintptr
	_           [8]byte
}

// Virtual memory constants.
const (
	MemAllocationGranularityMinimum     = 0   // CU_MEM_ALLOC_GRANULARITY_MINIMUM
	MemAllocationGranularityRecommended = 1   // CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
	MemHandleTypePosixFD                = 0x1 // CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
)

// GraphNodeParams is CUgraphNodeParams (256 bytes): a node's type and its
// parameters, one of the *NodeParams structures below laid over Params.
type GraphNodeParams struct {
	Type   int32 // CU_GRAPH_NODE_TYPE_*
	_      [3]int32
	Params [29]uint64
	_      int64
}

// Graph node types (CUgraphNodeType).
const (
	GraphNodeKernel      = 0
	GraphNodeMemcpy      = 1
	GraphNodeMemset      = 2
	GraphNodeHost        = 3
	GraphNodeEmpty       = 5
	GraphNodeWaitEvent   = 6
	GraphNodeEventRecord = 7
	GraphNodeMemAlloc    = 10
	GraphNodeMemFree     = 11
	GraphNodeConditional = 13
)

// KernelNodeParams is CUDA_KERNEL_NODE_PARAMS_v3.
type KernelNodeParams struct {
	Func                                                                     Function
	GridDimX, GridDimY, GridDimZ, BlockDimX, BlockDimY, BlockDimZ, SharedMem uint32
	KernelParams, Extra                                                      uintptr // void **
	Kern                                                                     Kernel
	Ctx                                                                      Context
}

// Memcpy3D is CUDA_MEMCPY3D.
type Memcpy3D struct {
	SrcXInBytes, SrcY, SrcZ, SrcLOD uintptr
	SrcMemoryType                   int32 // CU_MEMORYTYPE_*
	SrcHost                         uintptr
	SrcDevice                       DevicePtr
	SrcArray, Reserved0             uintptr
	SrcPitch, SrcHeight             uintptr
	DstXInBytes, DstY, DstZ, DstLOD uintptr
	DstMemoryType                   int32
	DstHost                         uintptr
	DstDevice                       DevicePtr
	DstArray, Reserved1             uintptr
	DstPitch, DstHeight             uintptr
	WidthInBytes, Height, Depth     uintptr
}

// MemoryTypeDevice is CU_MEMORYTYPE_DEVICE.
const MemoryTypeDevice = 2

// MemcpyNodeParams is CUDA_MEMCPY_NODE_PARAMS.
type MemcpyNodeParams struct {
	Flags, Reserved int32
	CopyCtx         Context
	Copy            Memcpy3D
}

// MemsetNodeParams is CUDA_MEMSET_NODE_PARAMS_v2.
type MemsetNodeParams struct {
	Dst                DevicePtr
	Pitch              uintptr
	Value, ElementSize uint32
	Width, Height      uintptr
	Ctx                Context
}

// HostNodeParams is CUDA_HOST_NODE_PARAMS_v2.
type HostNodeParams struct{ Fn, UserData uintptr }

// EventNodeParams is CUDA_EVENT_RECORD_NODE_PARAMS and
// CUDA_EVENT_WAIT_NODE_PARAMS.
type EventNodeParams struct{ Event Event }

// MemAllocNodeParams is CUDA_MEM_ALLOC_NODE_PARAMS_v2.
type MemAllocNodeParams struct {
	PoolProps       MemPoolProps
	AccessDescs     uintptr // const CUmemAccessDesc *
	AccessDescCount uintptr
	Bytesize        uintptr
	Dptr            DevicePtr // written by the driver
}

// MemFreeNodeParams is CUDA_MEM_FREE_NODE_PARAMS.
type MemFreeNodeParams struct{ Dptr DevicePtr }

// ConditionalNodeParams is CUDA_CONDITIONAL_NODE_PARAMS.
type ConditionalNodeParams struct {
	Handle   uint64
	Type     int32 // CU_GRAPH_COND_TYPE_*
	Size     uint32
	GraphOut *Graph // the driver's array of body graphs (C memory)
	Ctx      Context
}

// Conditional node types and handle flags.
const (
	GraphCondIf            = 0 // CU_GRAPH_COND_TYPE_IF
	GraphCondWhile         = 1 // CU_GRAPH_COND_TYPE_WHILE
	GraphCondAssignDefault = 1 // CU_GRAPH_COND_ASSIGN_DEFAULT
)

// JIT input types (CUjitInputType).
const (
	JITInputPTX     = 1
	JITInputLibrary = 4
)
