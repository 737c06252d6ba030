package cuda

import (
	"fmt"
	"slices"
	"strings"
)

// Attribute is a device attribute (CUdevice_attribute).
type Attribute int

// Device attributes. The names follow CU_DEVICE_ATTRIBUTE_*; any other value
// of the driver's enumeration may be passed as Attribute(n).
const (
	AttrMaxThreadsPerBlock                Attribute = 1
	AttrMaxBlockDimX                      Attribute = 2
	AttrMaxBlockDimY                      Attribute = 3
	AttrMaxBlockDimZ                      Attribute = 4
	AttrMaxGridDimX                       Attribute = 5
	AttrMaxGridDimY                       Attribute = 6
	AttrMaxGridDimZ                       Attribute = 7
	AttrMaxSharedMemoryPerBlock           Attribute = 8
	AttrTotalConstantMemory               Attribute = 9
	AttrWarpSize                          Attribute = 10
	AttrMaxPitch                          Attribute = 11
	AttrMaxRegistersPerBlock              Attribute = 12
	AttrClockRate                         Attribute = 13
	AttrTextureAlignment                  Attribute = 14
	AttrMultiprocessorCount               Attribute = 16
	AttrKernelExecTimeout                 Attribute = 17
	AttrIntegrated                        Attribute = 18
	AttrCanMapHostMemory                  Attribute = 19
	AttrComputeMode                       Attribute = 20
	AttrConcurrentKernels                 Attribute = 31
	AttrECCEnabled                        Attribute = 32
	AttrPCIBusID                          Attribute = 33
	AttrPCIDeviceID                       Attribute = 34
	AttrMemoryClockRate                   Attribute = 36
	AttrGlobalMemoryBusWidth              Attribute = 37
	AttrL2CacheSize                       Attribute = 38
	AttrMaxThreadsPerMultiprocessor       Attribute = 39
	AttrAsyncEngineCount                  Attribute = 40
	AttrUnifiedAddressing                 Attribute = 41
	AttrPCIDomainID                       Attribute = 50
	AttrComputeCapabilityMajor            Attribute = 75
	AttrComputeCapabilityMinor            Attribute = 76
	AttrStreamPrioritiesSupported         Attribute = 78
	AttrGlobalL1CacheSupported            Attribute = 79
	AttrLocalL1CacheSupported             Attribute = 80
	AttrMaxSharedMemoryPerMultiprocessor  Attribute = 81
	AttrMaxRegistersPerMultiprocessor     Attribute = 82
	AttrManagedMemory                     Attribute = 83
	AttrMultiGPUBoard                     Attribute = 84
	AttrPageableMemoryAccess              Attribute = 88
	AttrConcurrentManagedAccess           Attribute = 89
	AttrComputePreemptionSupported        Attribute = 90
	AttrCanUseHostPointerForRegisteredMem Attribute = 91
	AttrCooperativeLaunch                 Attribute = 95
	AttrMaxSharedMemoryPerBlockOptin      Attribute = 97
	AttrHostRegisterSupported             Attribute = 99
	AttrVirtualMemoryManagementSupported  Attribute = 102
	AttrMaxBlocksPerMultiprocessor        Attribute = 106
	AttrMaxPersistingL2CacheSize          Attribute = 108
	AttrReservedSharedMemoryPerBlock      Attribute = 111
	AttrMemoryPoolsSupported              Attribute = 115
	AttrGPUDirectRDMASupported            Attribute = 116
	AttrClusterLaunch                     Attribute = 120
	AttrNUMAID                            Attribute = 131
	AttrHostNUMAID                        Attribute = 134
)

var attrNames = map[Attribute]string{
	AttrMaxThreadsPerBlock: "MaxThreadsPerBlock", AttrMaxBlockDimX: "MaxBlockDimX",
	AttrMaxBlockDimY: "MaxBlockDimY", AttrMaxBlockDimZ: "MaxBlockDimZ",
	AttrMaxGridDimX: "MaxGridDimX", AttrMaxGridDimY: "MaxGridDimY", AttrMaxGridDimZ: "MaxGridDimZ",
	AttrMaxSharedMemoryPerBlock: "MaxSharedMemoryPerBlock", AttrTotalConstantMemory: "TotalConstantMemory",
	AttrWarpSize: "WarpSize", AttrMaxPitch: "MaxPitch", AttrMaxRegistersPerBlock: "MaxRegistersPerBlock",
	AttrClockRate: "ClockRate", AttrTextureAlignment: "TextureAlignment",
	AttrMultiprocessorCount: "MultiprocessorCount", AttrKernelExecTimeout: "KernelExecTimeout",
	AttrIntegrated: "Integrated", AttrCanMapHostMemory: "CanMapHostMemory", AttrComputeMode: "ComputeMode",
	AttrConcurrentKernels: "ConcurrentKernels", AttrECCEnabled: "ECCEnabled", AttrPCIBusID: "PCIBusID",
	AttrPCIDeviceID: "PCIDeviceID", AttrMemoryClockRate: "MemoryClockRate",
	AttrGlobalMemoryBusWidth: "GlobalMemoryBusWidth", AttrL2CacheSize: "L2CacheSize",
	AttrMaxThreadsPerMultiprocessor: "MaxThreadsPerMultiprocessor", AttrAsyncEngineCount: "AsyncEngineCount",
	AttrUnifiedAddressing: "UnifiedAddressing", AttrPCIDomainID: "PCIDomainID",
	AttrComputeCapabilityMajor: "ComputeCapabilityMajor", AttrComputeCapabilityMinor: "ComputeCapabilityMinor",
	AttrStreamPrioritiesSupported: "StreamPrioritiesSupported", AttrGlobalL1CacheSupported: "GlobalL1CacheSupported",
	AttrLocalL1CacheSupported:            "LocalL1CacheSupported",
	AttrMaxSharedMemoryPerMultiprocessor: "MaxSharedMemoryPerMultiprocessor",
	AttrMaxRegistersPerMultiprocessor:    "MaxRegistersPerMultiprocessor", AttrManagedMemory: "ManagedMemory",
	AttrMultiGPUBoard: "MultiGPUBoard", AttrPageableMemoryAccess: "PageableMemoryAccess",
	AttrConcurrentManagedAccess: "ConcurrentManagedAccess", AttrComputePreemptionSupported: "ComputePreemptionSupported",
	AttrCanUseHostPointerForRegisteredMem: "CanUseHostPointerForRegisteredMem",
	AttrCooperativeLaunch:                 "CooperativeLaunch", AttrMaxSharedMemoryPerBlockOptin: "MaxSharedMemoryPerBlockOptin",
	AttrHostRegisterSupported: "HostRegisterSupported", AttrVirtualMemoryManagementSupported: "VirtualMemoryManagementSupported",
	AttrMaxBlocksPerMultiprocessor: "MaxBlocksPerMultiprocessor", AttrMaxPersistingL2CacheSize: "MaxPersistingL2CacheSize",
	AttrReservedSharedMemoryPerBlock: "ReservedSharedMemoryPerBlock", AttrMemoryPoolsSupported: "MemoryPoolsSupported",
	AttrGPUDirectRDMASupported: "GPUDirectRDMASupported", AttrClusterLaunch: "ClusterLaunch",
	AttrNUMAID: "NUMAID", AttrHostNUMAID: "HostNUMAID",
}

// String returns the attribute's name without its "Attr" prefix.
func (a Attribute) String() string {
	if s, ok := attrNames[a]; ok {
		return s
	}
	return fmt.Sprintf("Attribute(%d)", int(a))
}

// ParseAttribute returns the attribute named s, with or without the "Attr"
// prefix, in any case ("MultiprocessorCount", "multiprocessorcount").
func ParseAttribute(s string) (Attribute, error) {
	want := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "Attr"), "attr"))
	for a, name := range attrNames {
		if strings.ToLower(name) == want {
			return a, nil
		}
	}
	return 0, errorf("ParseAttribute", ErrInvalidValue, "no device attribute named %q", s)
}

// KnownAttributes returns every attribute this package names, in order.
func KnownAttributes() []Attribute {
	as := make([]Attribute, 0, len(attrNames))
	for a := range attrNames {
		as = append(as, a)
	}
	slices.Sort(as)
	return as
}
