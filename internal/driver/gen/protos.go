package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// cType describes how a C base type appears in Go.
type cType struct {
	goType string
	// size is the type's size in bytes; scalar out-parameters must fit a
	// scratch slot (8 bytes).
	size int
}

var baseTypes = map[string]cType{
	"unsigned int":                     {"uint32", 4},
	"int":                              {"int32", 4},
	"unsigned char":                    {"uint8", 1},
	"unsigned short":                   {"uint16", 2},
	"size_t":                           {"uintptr", 8},
	"float":                            {"float32", 4},
	"char":                             {"byte", 1},
	"void":                             {"", 0},
	"CUresult":                         {"Result", 4},
	"CUdevice":                         {"Device", 4},
	"CUdevice_attribute":               {"DeviceAttribute", 4},
	"CUcontext":                        {"Context", 8},
	"CUstream":                         {"Stream", 8},
	"CUevent":                          {"Event", 8},
	"CUdeviceptr":                      {"DevicePtr", 8},
	"CUmodule":                         {"Module", 8},
	"CUfunction":                       {"Function", 8},
	"CUjit_option":                     {"JITOption", 4},
	"CUfunction_attribute":             {"FunctionAttribute", 4},
	"CUmemoryPool":                     {"MemPool", 8},
	"CUmemPool_attribute":              {"MemPoolAttribute", 4},
	"CUgraph":                          {"Graph", 8},
	"CUgraphExec":                      {"GraphExec", 8},
	"CUgraphNode":                      {"GraphNode", 8},
	"CUstreamCaptureMode":              {"int32", 4},
	"CUstreamCaptureStatus":            {"int32", 4},
	"unsigned long long":               {"uint64", 8},
	"CUlibrary":                        {"Library", 8},
	"CUkernel":                         {"Kernel", 8},
	"CUlibraryOption":                  {"int32", 4},
	"CUmemGenericAllocationHandle":     {"uint64", 8},
	"CUmemAllocationGranularity_flags": {"int32", 4},
	"CUgraphConditionalHandle":         {"uint64", 8},
	"CUlinkState":                      {"LinkState", 8},
	"CUjitInputType":                   {"int32", 4},
	"CUkernelNodeAttrID":               {"int32", 4},
	// Structures, passed by pointer and read by the driver (/*in*/), or
	// written (resultInfo).
	"CUgraphExecUpdateResultInfo": {"", 0},
	"CUmemPoolProps":              {"", 0},
	"CUmemAccessDesc":             {"", 0},
	"CUlaunchConfig":              {"", 0},
	"CUmemAllocationProp":         {"", 0},
	"CUipcMemHandle":              {"", 0},
	"CUipcEventHandle":            {"", 0},
	"CUgraphNodeParams":           {"", 0},
	"CUkernelNodeAttrValue":       {"", 0},
}

// handle64Types are the 64-byte structures passed by value.
var handle64Types = map[string]bool{"CUipcMemHandle": true, "CUipcEventHandle": true}

// cTypes are the types the cgo shim declares for each Go type: handles
// travel as uintptr_t, which the platforms' C ABIs pass as they pass
// pointers, so no cast from Go's uintptr to a pointer is needed.
var cTypes = map[string]struct{ c, cgo string }{
	"uint32": {"unsigned int", "C.uint"}, "int32": {"int", "C.int"}, "uint8": {"unsigned char", "C.uchar"},
	"uint16": {"unsigned short", "C.ushort"}, "uintptr": {"size_t", "C.size_t"}, "float32": {"float", "C.float"},
	"Result": {"int", "C.int"}, "Device": {"int", "C.int"}, "DeviceAttribute": {"int", "C.int"},
	"JITOption": {"int", "C.int"}, "FunctionAttribute": {"int", "C.int"},
	"Context": {"uintptr_t", "C.uintptr_t"}, "Stream": {"uintptr_t", "C.uintptr_t"}, "Event": {"uintptr_t", "C.uintptr_t"},
	"Module": {"uintptr_t", "C.uintptr_t"}, "Function": {"uintptr_t", "C.uintptr_t"},
	"MemPool": {"uintptr_t", "C.uintptr_t"}, "MemPoolAttribute": {"int", "C.int"},
	"Graph": {"uintptr_t", "C.uintptr_t"}, "GraphExec": {"uintptr_t", "C.uintptr_t"}, "GraphNode": {"uintptr_t", "C.uintptr_t"},
	"Library": {"uintptr_t", "C.uintptr_t"}, "Kernel": {"uintptr_t", "C.uintptr_t"}, "LinkState": {"uintptr_t", "C.uintptr_t"},
	"uint64":    {"unsigned long long", "C.ulonglong"},
	"DevicePtr": {"unsigned long long", "C.ulonglong"},
	"*byte":     {"char *", "*C.char"}, "unsafe.Pointer": {"void *", "unsafe.Pointer"},
}

// Parameter kinds.
const (
	kindValue  = "value"  // passed by value: uintptr(x)
	kindBuffer = "buffer" // a host buffer the caller owns: void* or char*
	kindOut    = "out"    // a pointer to one scalar the driver writes
	// a 64-byte structure passed by value (CUipcMemHandle,
	// CUipcEventHandle): the caller gives a *[64]byte, which each
	// backend passes as its platform's C ABI passes the structure
	kindHandle64 = "handle64"
)

type param struct {
	CName  string // name in the C prototype
	Name   string // Go parameter name
	CType  string // the C type as written, e.g. "const char **"
	GoType string // Go type of the parameter
	Elem   string // for kindOut, the pointed-to Go type
	Kind   string
	Slot   int // for kindOut, the scratch slot it uses
}

type proto struct {
	C      string // the whole C prototype
	CName  string // cuMemAlloc_v2
	GoName string // MemAlloc
	Params []param
	Outs   int  // number of scratch slots used
	Bound  bool // the call needs a context current: the Go function takes it first
}

var (
	lineRE  = regexp.MustCompile(`^CUresult\s+(cu\w+)\s*\((.*)\)\s*;$`)
	paramRE = regexp.MustCompile(`^(const\s+)?([A-Za-z_][\w ]*?)\s*(\*{0,2})\s*(\w+)$`)
	verRE   = regexp.MustCompile(`_v\d+$`)
)

// renamed keeps Go parameter names from shadowing predeclared identifiers.
var renamed = map[string]string{"len": "n", "error": "code", "func": "function", "type": "typ", "map": "desc", "pool_out": "poolOut",
	// the generated body's own variables
	"fn": "fnArg", "c": "cArg", "r": "rArg"}

// parseProtos reads the table of C prototypes.
func parseProtos(r io.Reader) ([]proto, error) {
	var protos []proto
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "", strings.HasPrefix(line, "#"):
			continue
		}
		unbound := strings.HasSuffix(line, "// unbound")
		line = strings.TrimSpace(strings.TrimSuffix(line, "// unbound"))
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: not a CUresult prototype: %q", n, line)
		}
		p := proto{C: line, CName: m[1], Bound: !unbound}
		p.GoName = verRE.ReplaceAllString(strings.TrimPrefix(m[1], "cu"), "")
		args := strings.TrimSpace(m[2])
		if args != "void" && args != "" {
			for a := range strings.SplitSeq(args, ",") {
				prm, err := parseParam(strings.TrimSpace(a), &p.Outs)
				if err != nil {
					return nil, fmt.Errorf("line %d: %s: %w", n, p.CName, err)
				}
				p.Params = append(p.Params, prm)
			}
		}
		if p.Outs > 4 || len(p.Params) > 16 {
			return nil, fmt.Errorf("line %d: %s: more than 4 out-parameters or 16 parameters", n, p.CName)
		}
		protos = append(protos, p)
	}
	return protos, sc.Err()
}

func parseParam(s string, outs *int) (param, error) {
	in := strings.HasSuffix(s, "/*in*/")
	s = strings.TrimSpace(strings.TrimSuffix(s, "/*in*/"))
	m := paramRE.FindStringSubmatch(s)
	if m == nil {
		return param{}, fmt.Errorf("cannot parse parameter %q", s)
	}
	base := strings.Join(strings.Fields(m[2]), " ")
	ct, ok := baseTypes[base]
	if !ok {
		return param{}, fmt.Errorf("unknown C type %q", base)
	}
	depth := len(m[3])
	name := m[4]
	goName := strings.ToLower(name[:1]) + name[1:]
	if r, ok := renamed[goName]; ok {
		goName = r
	}
	p := param{CName: name, Name: goName, CType: strings.TrimSpace(m[1] + base + " " + m[3])}
	switch {
	case depth == 0 && handle64Types[base]:
		p.Kind, p.GoType = kindHandle64, "*[64]byte"
	case in && depth >= 1:
		// An array the driver reads: the caller builds it.
		p.Kind, p.GoType = kindBuffer, "unsafe.Pointer"
	case depth == 0 && ct.goType != "":
		p.Kind, p.GoType = kindValue, ct.goType
	case depth == 1 && (base == "void" || base == "char"):
		p.Kind = kindBuffer
		if base == "void" {
			p.GoType = "unsafe.Pointer"
		} else {
			p.GoType = "*byte"
		}
	case depth == 1:
		p.Kind, p.Elem = kindOut, ct.goType
	case depth == 2 && base == "void":
		p.Kind, p.Elem = kindOut, "unsafe.Pointer"
	case depth == 2:
		p.Kind, p.Elem = kindOut, "*"+ct.goType
	default:
		return param{}, fmt.Errorf("unsupported parameter %q", s)
	}
	if p.Kind == kindOut {
		p.GoType = "*" + p.Elem
		p.Slot = *outs
		*outs++
	}
	return p, nil
}
