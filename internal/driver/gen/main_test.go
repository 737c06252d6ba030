package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	protos, err := parse(strings.NewReader(`# group
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuCtxSynchronize(void);
CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, CUstream hStream, void **kernelParams /*in*/);
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(protos) != 5 {
		t.Fatalf("%d prototypes, want 5", len(protos))
	}
	if p := protos[4].Params[3]; p.Kind != kindBuffer || p.GoType != "unsafe.Pointer" || p.Name != "kernelParams" {
		t.Errorf("void ** marked /*in*/ parsed as %+v", p)
	}
	a := protos[0]
	if a.GoName != "MemAlloc" || a.Group != "group" || a.Outs != 1 {
		t.Errorf("MemAlloc parsed as %+v", a)
	}
	if p := a.Params[0]; p.Kind != kindOut || p.GoType != "*DevicePtr" {
		t.Errorf("dptr parsed as %+v", p)
	}
	if p := a.Params[1]; p.Kind != kindValue || p.GoType != "uintptr" {
		t.Errorf("bytesize parsed as %+v", p)
	}
	if len(protos[1].Params) != 0 {
		t.Errorf("void parameter list parsed as %+v", protos[1].Params)
	}
	if p := protos[2].Params[0]; p.Name != "code" {
		t.Errorf("C parameter 'error' became %q; want a name that shadows nothing", p.Name)
	}
	if p := protos[2].Params[1]; p.Kind != kindOut || p.GoType != "**byte" {
		t.Errorf("const char ** parsed as %+v", p)
	}
	if p := protos[3].Params[1]; p.Kind != kindBuffer || p.GoType != "unsafe.Pointer" {
		t.Errorf("const void * parsed as %+v", p)
	}
}

func TestParseErrors(t *testing.T) {
	for _, line := range []string{
		"int cuFoo(void);",
		"CUresult cuFoo(struct weird x);",
		"CUresult cuFoo(int ***x);",
	} {
		if _, err := parse(strings.NewReader(line)); err == nil {
			t.Errorf("parse(%q) succeeded", line)
		}
	}
}
