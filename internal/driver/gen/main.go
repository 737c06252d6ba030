// Command gen turns the table of C prototypes (prototypes.txt) into the Go
// functions of package driver.
//
// The table is the one source of truth: each line is a driver function as
// cuda.h declares it. The generator classifies every parameter once (value,
// host buffer, scalar out-parameter) and hands the classified prototypes to a
// backend template: purego (for CGO_ENABLED=0) and cgo, whose C shim binds
// the context and calls the driver in one crossing.
//
// Usage:
//
//	go run ./gen -in prototypes.txt -backend purego -out zcalls_purego.go
//	go run ./gen -in prototypes.txt -backend cgo -out zcalls_cgo.go
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"io"
	"log"
	"os"
	"regexp"
	"strings"
	"text/template"
)

// cType describes how a C base type appears in Go.
type cType struct {
	goType string
	// size is the type's size in bytes; scalar out-parameters must fit a
	// scratch slot (8 bytes).
	size int
}

var baseTypes = map[string]cType{
	"unsigned int":         {"uint32", 4},
	"int":                  {"int32", 4},
	"unsigned char":        {"uint8", 1},
	"unsigned short":       {"uint16", 2},
	"size_t":               {"uintptr", 8},
	"float":                {"float32", 4},
	"char":                 {"byte", 1},
	"void":                 {"", 0},
	"CUresult":             {"Result", 4},
	"CUdevice":             {"Device", 4},
	"CUdevice_attribute":   {"DeviceAttribute", 4},
	"CUcontext":            {"Context", 8},
	"CUstream":             {"Stream", 8},
	"CUevent":              {"Event", 8},
	"CUdeviceptr":          {"DevicePtr", 8},
	"CUmodule":             {"Module", 8},
	"CUfunction":           {"Function", 8},
	"CUjit_option":         {"JITOption", 4},
	"CUfunction_attribute": {"FunctionAttribute", 4},
}

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
	"DevicePtr": {"unsigned long long", "C.ulonglong"},
	"*byte":     {"char *", "*C.char"}, "unsafe.Pointer": {"void *", "unsafe.Pointer"},
}

// Parameter kinds.
const (
	kindValue  = "value"  // passed by value: uintptr(x)
	kindBuffer = "buffer" // a host buffer the caller owns: void* or char*
	kindOut    = "out"    // a pointer to one scalar the driver writes
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
	Group  string
}

var (
	lineRE  = regexp.MustCompile(`^CUresult\s+(cu\w+)\s*\((.*)\)\s*;$`)
	paramRE = regexp.MustCompile(`^(const\s+)?([A-Za-z_][\w ]*?)\s*(\*{0,2})\s*(\w+)$`)
	verRE   = regexp.MustCompile(`_v\d+$`)
)

// renamed keeps Go parameter names from shadowing predeclared identifiers.
var renamed = map[string]string{"len": "n", "error": "code", "func": "function", "type": "typ",
	// the generated body's own variables
	"fn": "fnArg", "c": "cArg", "r": "rArg"}

func parse(r io.Reader) ([]proto, error) {
	var protos []proto
	group := ""
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "#"):
			group = strings.TrimSpace(strings.TrimPrefix(line, "#"))
			continue
		}
		unbound := strings.HasSuffix(line, "// unbound")
		line = strings.TrimSpace(strings.TrimSuffix(line, "// unbound"))
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: not a CUresult prototype: %q", n, line)
		}
		p := proto{C: line, CName: m[1], Group: group, Bound: !unbound}
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

var funcs = template.FuncMap{
	"signature": func(p proto) string {
		var parts []string
		if p.Bound {
			parts = append(parts, "ctx Context")
		}
		for _, a := range p.Params {
			parts = append(parts, a.Name+" "+a.GoType)
		}
		return strings.Join(parts, ", ")
	},
	"args": func(p proto) string {
		var lines []string
		for i, a := range p.Params {
			var v string
			switch a.Kind {
			case kindValue:
				v = "uintptr(" + a.Name + ")"
			case kindBuffer:
				v = "uintptr(unsafe.Pointer(" + a.Name + "))"
			case kindOut:
				v = fmt.Sprintf("uintptr(unsafe.Pointer(&c.out[%d]))", a.Slot)
			}
			lines = append(lines, fmt.Sprintf("c.args[%d] = %s", i, v))
		}
		return strings.Join(lines, "\n\t")
	},
	"buffers": func(p proto) []string {
		var names []string
		for _, a := range p.Params {
			if a.Kind == kindBuffer {
				names = append(names, a.Name)
			}
		}
		return names
	},
	// cparams declares the shim's parameters after fn (and ctx).
	"cparams": func(p proto) string {
		var parts []string
		for _, a := range p.Params {
			parts = append(parts, shimType(a)+" "+a.Name)
		}
		return strings.Join(parts, ", ")
	},
	"ctypes": func(p proto) string {
		var parts []string
		for _, a := range p.Params {
			parts = append(parts, shimType(a))
		}
		if len(parts) == 0 {
			return "void"
		}
		return strings.Join(parts, ", ")
	},
	"cnames": func(p proto) string {
		var parts []string
		for _, a := range p.Params {
			parts = append(parts, a.Name)
		}
		return strings.Join(parts, ", ")
	},
	// cgoargs converts the Go arguments for the shim.
	"cgoargs": func(p proto) string {
		var parts []string
		for _, a := range p.Params {
			switch a.Kind {
			case kindValue:
				parts = append(parts, cTypes[a.GoType].cgo+"("+a.Name+")")
			case kindBuffer:
				if a.GoType == "unsafe.Pointer" {
					parts = append(parts, a.Name)
				} else {
					parts = append(parts, "(*C.char)(unsafe.Pointer("+a.Name+"))")
				}
			case kindOut:
				parts = append(parts, fmt.Sprintf("(*%s)(unsafe.Pointer(&c.out[%d]))", cgoElem(a.Elem), a.Slot))
			}
		}
		if len(parts) == 0 {
			return ""
		}
		return ", " + strings.Join(parts, ", ")
	},
}

// shimType is the shim's C type for a parameter.
func shimType(a param) string {
	if a.Kind == kindOut {
		return strings.TrimSuffix(cTypes[a.Elem].c, " ") + " *"
	}
	return cTypes[a.GoType].c
}

// cgoElem is the cgo type of an out-parameter's element.
func cgoElem(elem string) string { return cTypes[elem].cgo }

var templates = map[string]string{
	"syms": `// Code generated by gen from prototypes.txt; DO NOT EDIT.

package driver

// Indexes into syms, in the order of prototypes.txt.
const (
{{- range $i, $p := .}}
	sym{{$p.GoName}}{{if eq $i 0}} = iota{{end}}
{{- end}}
	symCount
)

// symNames are the names resolved in the driver library, by index.
var symNames = [symCount]string{
{{- range .}}
	"{{.CName}}",
{{- end}}
}
`,

	"purego": `// Code generated by gen from prototypes.txt; DO NOT EDIT.

//go:build !cgo || gocuda_purego

package driver

import (
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

var (
	_ unsafe.Pointer
	_ = runtime.KeepAlive
)

// Backend names the way this build calls the driver.
const Backend = "purego"

// BindsInCall reports whether each function makes its context current
// itself. With purego every crossing costs about 170 ns, so the caller binds
// once per operation instead, on a locked thread, and the ctx parameters go
// unused.
const BindsInCall = false

// setBinders has nothing to set up for purego.
func setBinders(*[symCount]uintptr) {}

{{range .}}
// {{.GoName}} calls {{.CName}}.
//
//	{{.C}}
func {{.GoName}}({{signature .}}) Result {
	fn := syms[sym{{.GoName}}]
	if fn == 0 {
		return ResultMissingSymbol
	}
{{- range buffers .}}
	escape(unsafe.Pointer({{.}}))
{{- end}}
{{- if .Params}}
	c := getCall()
	{{args .}}
	r, _, _ := purego.SyscallN(fn, c.args[:{{len .Params}}]...)
{{- range .Params}}{{if eq .Kind "out"}}
	*{{.Name}} = *(*{{.Elem}})(unsafe.Pointer(&c.out[{{.Slot}}]))
{{- end}}{{end}}
{{- range buffers .}}
	runtime.KeepAlive({{.}})
{{- end}}
	putCall(c)
{{- else}}
	r, _, _ := purego.SyscallN(fn)
{{- end}}
	return Result(int32(r))
}
{{end}}`,

	"cgo": `// Code generated by gen from prototypes.txt; DO NOT EDIT.

//go:build cgo && !gocuda_purego

package driver

/*
#include <stddef.h>
#include <stdint.h>

typedef int (*gocuda_getcur_fn)(uintptr_t *);
typedef int (*gocuda_setcur_fn)(uintptr_t);
static uintptr_t gocuda_getcur, gocuda_setcur;

static void gocuda_set_binders(uintptr_t getcur, uintptr_t setcur) {
	gocuda_getcur = getcur;
	gocuda_setcur = setcur;
}

// gocuda_bind makes ctx current on this thread if it is not: the binding
// and the call it precedes cost one crossing from Go together. A failure
// returns the code with a bit saying which binding call failed (see
// BindFailure), so that the error names it rather than the call it
// preceded.
static int gocuda_bind(uintptr_t ctx) {
	uintptr_t cur;
	int r = ((gocuda_getcur_fn)gocuda_getcur)(&cur);
	if (r) return r | 0x40000000;
	if (cur != ctx) {
		r = ((gocuda_setcur_fn)gocuda_setcur)(ctx);
		if (r) return r | 0x20000000;
	}
	return 0;
}
{{range .}}
static int gocuda_{{.GoName}}(uintptr_t fn{{if .Bound}}, uintptr_t ctx{{end}}{{if .Params}}, {{cparams .}}{{end}}) {
{{- if .Bound}}
	if (ctx) {
		int r = gocuda_bind(ctx);
		if (r) return r;
	}
{{- end}}
	return ((int (*)({{ctypes .}}))fn)({{cnames .}});
}
{{end -}}
*/
import "C"

import "unsafe"

var _ unsafe.Pointer

// Backend names the way this build calls the driver.
const Backend = "cgo"

// BindsInCall reports whether each function makes its context current
// itself: with cgo, one C function binds and calls, one crossing for both.
// A zero ctx binds nothing.
const BindsInCall = true

// setBinders gives the shim the functions it binds contexts with.
func setBinders(syms *[symCount]uintptr) {
	C.gocuda_set_binders(C.uintptr_t(syms[symCtxGetCurrent]), C.uintptr_t(syms[symCtxSetCurrent]))
}
{{range .}}
// {{.GoName}} calls {{.CName}}{{if .Bound}}, with ctx current{{end}}.
//
//	{{.C}}
func {{.GoName}}({{signature .}}) Result {
	fn := syms[sym{{.GoName}}]
	if fn == 0 {
		return ResultMissingSymbol
	}
{{- if .Outs}}
	c := getCall()
{{- end}}
	r := C.gocuda_{{.GoName}}(C.uintptr_t(fn){{if .Bound}}, C.uintptr_t(ctx){{end}}{{cgoargs .}})
{{- range .Params}}{{if eq .Kind "out"}}
	*{{.Name}} = *(*{{.Elem}})(unsafe.Pointer(&c.out[{{.Slot}}]))
{{- end}}{{end}}
{{- if .Outs}}
	putCall(c)
{{- end}}
	return Result(r)
}
{{end}}`,
}

func main() {
	in := flag.String("in", "prototypes.txt", "table of C prototypes")
	out := flag.String("out", "", "Go file to write")
	backend := flag.String("backend", "purego", "backend to emit: purego or cgo")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("gen: ")

	text, ok := templates[*backend]
	if !ok {
		log.Fatalf("unknown backend %q", *backend)
	}
	f, err := os.Open(*in)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	protos, err := parse(f)
	if err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	if err := template.Must(template.New(*backend).Funcs(funcs).Parse(text)).Execute(&buf, protos); err != nil {
		log.Fatal(err)
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		log.Fatalf("formatting output: %v\n%s", err, buf.Bytes())
	}
	if *out == "" {
		os.Stdout.Write(src)
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}
