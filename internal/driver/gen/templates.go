package main

import (
	"fmt"
	"strings"
	"text/template"
)

var funcs = template.FuncMap{
	"lowerFirst": func(s string) string { return strings.ToLower(s[:1]) + s[1:] },
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
			case kindHandle64:
				v = "0 // the structure: see byValue64"
			}
			lines = append(lines, fmt.Sprintf("c.args[%d] = %s", i, v))
		}
		return strings.Join(lines, "\n\t")
	},
	"buffers": func(p proto) []string {
		var names []string
		for _, a := range p.Params {
			if a.Kind == kindBuffer || a.Kind == kindHandle64 {
				names = append(names, a.Name)
			}
		}
		return names
	},
	// syscallArgs is SyscallN's argument list after fn: the argument
	// block, rearranged by byValue64 where a structure is passed by value.
	"syscallArgs": func(p proto) string {
		for i, a := range p.Params {
			if a.Kind == kindHandle64 {
				return fmt.Sprintf("byValue64(c.args[:%d], %d, %s)...", len(p.Params), i, a.Name)
			}
		}
		return fmt.Sprintf("c.args[:%d]...", len(p.Params))
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
			if a.Kind == kindHandle64 {
				parts = append(parts, "gocuda_h64")
				continue
			}
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
			if a.Kind == kindHandle64 {
				parts = append(parts, "*(const gocuda_h64 *)"+a.Name)
				continue
			}
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
			case kindHandle64:
				parts = append(parts, "unsafe.Pointer("+a.Name+")")
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
	if a.Kind == kindHandle64 {
		return "const void *"
	}
	if a.Kind == kindOut {
		return strings.TrimSuffix(cTypes[a.Elem].c, " ") + " *"
	}
	return cTypes[a.GoType].c
}

// cgoElem is the cgo type of an out-parameter's element.
func cgoElem(elem string) string { return cTypes[elem].cgo }

var templates = map[string]string{
	"syms": `{{header}}

package driver

// Indexes into syms, in the order of prototypes.txt.
const (
{{- range $i, $p := .}}
	sym{{$p.GoName}}{{if eq $i 0}} = iota{{end}}
{{- end}}
	symCount
)

// The functions, as a Status names them: an index into symNames, plus one.
const (
{{- range $i, $p := .}}
	Func{{$p.GoName}}{{if eq $i 0}} Func = iota + 1{{end}}
{{- end}}
)

// symNames are the names resolved in the driver library, by index.
var symNames = [symCount]string{
{{- range .}}
	"{{.CName}}",
{{- end}}
}
`,

	"purego": `{{header}}

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
func {{.GoName}}({{signature .}}) Status {
	fn := syms[sym{{.GoName}}]
	if fn == 0 {
		return Status{Code: ResultMissingSymbol, Func: Func{{.GoName}}}
	}
{{- range buffers .}}
	escape(unsafe.Pointer({{.}}))
{{- end}}
{{- if .Params}}
	c := getCall()
	{{args .}}
	r, _, _ := purego.SyscallN(fn, {{syscallArgs .}})
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
	return Status{Code: Result(int32(r)), Func: Func{{.GoName}}}
}
{{end}}`,

	"cgo": `{{header}}

//go:build cgo && !gocuda_purego

package driver

/*
#include <stddef.h>
#include <stdint.h>

typedef int (*gocuda_getcur_fn)(uintptr_t *);
typedef int (*gocuda_setcur_fn)(uintptr_t);
static uintptr_t gocuda_getcur, gocuda_setcur;

// gocuda_h64 is a 64-byte structure the driver takes by value
// (CUipcMemHandle, CUipcEventHandle): C passes it as the platform's ABI
// says.
typedef struct { unsigned char bytes[64]; } gocuda_h64;

static void gocuda_set_binders(uintptr_t getcur, uintptr_t setcur) {
	gocuda_getcur = getcur;
	gocuda_setcur = setcur;
}

// gocuda_bind makes ctx current on this thread if it is not: the binding
// and the call it precedes cost one crossing from Go together. A failure
// returns the code with a bit saying which binding call failed (see
// shimStatus), so that the error names it rather than the call it
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
func {{.GoName}}({{signature .}}) Status {
	fn := syms[sym{{.GoName}}]
	if fn == 0 {
		return Status{Code: ResultMissingSymbol, Func: Func{{.GoName}}}
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
	return shimStatus(int32(r), Func{{.GoName}})
}
{{end}}`,

	"enums": `{{header}}

package {{.Package}}
{{range $e := .Enums}}
// {{$e.CType}} values.
const (
{{- range .Values}}
	{{.GoName}} {{$e.GoType}} = {{.Value}} // {{.CName}}{{if .Text}}: {{.Text}}{{end}}
{{- end}}
)
{{if ne $.Package "driver"}}
// {{lowerFirst $e.GoType}}Names are the names of the {{$e.GoType}} values, without their prefix.
var {{lowerFirst $e.GoType}}Names = map[{{$e.GoType}}]string{
{{- range .Values}}
	{{.GoName}}: "{{.Name}}",
{{- end}}
}
{{end}}{{end}}`,

	"enums-c": `{{header}}
#ifndef FAKECUDA_ZENUMS_H
#define FAKECUDA_ZENUMS_H
{{range $e := .Enums}}
/* {{$e.CType}}{{if eq $e.CType "CUresult"}}, without the CUDA_ERROR_ prefix{{end}} */
enum {
{{- range .Values}}
	{{if eq $e.CType "CUresult"}}{{short .CName}}{{else}}{{.CName}}{{end}} = {{.Value}},
{{- end}}
};
{{end}}
/* The results' names and descriptions, for cuGetErrorName and cuGetErrorString. */
static const struct {
	int code;
	const char *name, *text;
} cu_results[] = {
{{- range $e := .Enums}}{{if eq $e.CType "CUresult"}}{{range .Values}}
	{ {{.Value}}, "{{.CName}}", "{{.Text}}" },
{{- end}}{{end}}{{end}}
};

#endif
`,
}
