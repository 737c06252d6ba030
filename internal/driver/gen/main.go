// Command gen turns the driver's tables into code: the C prototypes
// (prototypes.txt) into the Go functions of package driver, and the
// enumerations (enums.txt) into the Go constants of packages driver and
// cuda and the fake driver's C header.
//
// prototypes.txt is the one source of truth for the calls: each line is a
// driver function as cuda.h declares it. The generator classifies every
// parameter once (value, host buffer, scalar out-parameter) and hands the
// classified prototypes to a backend template: purego (for CGO_ENABLED=0)
// and cgo, whose C shim binds the context and calls the driver in one
// crossing. Each function returns a Status that names it, so an error can
// never name another call. Each output's first line names the command that
// made it.
//
// Usage:
//
//	go run ./gen -in prototypes.txt -backend syms -out zsyms.go
//	go run ./gen -in prototypes.txt -backend purego -out zcalls_purego.go
//	go run ./gen -in prototypes.txt -backend cgo -out zcalls_cgo.go
//	go run ./gen -in enums.txt -backend enums -pkg driver -out zenums.go
//	go run ./gen -in enums.txt -backend enums-c -out ../fakecuda/csrc/zenums.h
//	go run ../../driver/gen -in prototypes.txt -backend lib -pkg cufft -out zcalls.go
//	go run ../../driver/gen -in status.txt -backend lib-status -pkg cufft -out zstatus.go
//	go run ../internal/driver/gen -in ../internal/lib/cufft/status.txt -backend lib-public -pkg cufft -out zstatus.go
//
// # The library backend
//
// The backends lib and lib-status (libprotos.go, libtemplates.go) make the
// raw layer of each NVIDIA library gocuda calls (cuFFT, cuRAND, cuBLAS,
// NCCL, NVRTC): one package internal/lib/<name> per public package, made
// from two tables beside it; lib-public makes the public package's Result
// and Error from the second.
//
// prototypes.txt holds the C prototypes as the library's header declares
// them, one a line ('#' starts a comment line), and directives:
//
//	status cufftResult Result          the status type: its C and Go names
//	library Table cufft                the functions below are one shared library's:
//	                                   Table is the Go name of its symbol table,
//	                                   cufft the C prefix its Go names drop
//	library LtTable cublasLt Lt        ... and Lt a Go prefix they take instead
//	cufftResult cufftCreate(cufftHandle *handle); // required
//	cufftResult cufftExecC2C(cufftHandle plan, cufftComplex *idata /*device*/, cufftComplex *odata /*device*/, int direction);
//
// A function's Go name is its C name without the library's C prefix and a
// version suffix (_v2), after the Go prefix: cufftExecC2C is ExecC2C,
// cublasCreate_v2 Create, cublasLtMatmul LtMatmul. Its parameters keep
// their C names (lowercase first, in camel case: rng_type is rngType; a Go
// keyword or predeclared name takes Arg: type is typeArg), and their types
// come from libTypes (libprotos.go), the one table of C types: int is int32, unsigned int uint32, long long int64, size_t uintptr,
// float and double float32 and float64, the status type the Go status
// type, and each handle a named Go type declared in zcalls.go (cufftHandle
// is Handle, an int32; curandGenerator_t Generator, a uintptr). A pointer
// is a typed Go pointer (int * is *int32, const char * const * is **byte),
// void * is unsafe.Pointer; a pointer marked /*device*/ is a device
// address, a uintptr, which Go's collector must never see as a pointer
// (whatever it points to: cublasGemmBatchedEx's arrays of device pointers
// too). An array parameter (T x[]) is a pointer, as C passes it. const is
// dropped. A type libTypes lacks is an error: add it there.
//
// A pointer to a pointer marked /*device_out*/ (void **ptr) is host memory
// where C writes a device address: a *uintptr, as ncclMemAlloc's.
//
// "-backend lib" writes zcalls.go: each library's Table (a *dl.Table: its
// symbols, its required ones, the function values it binds) and one Go
// function per prototype, which calls the C function through
// purego.SyscallN, or through a function value purego.RegisterFunc built
// when float or double parameters are passed by value (SyscallN passes
// only integer registers). A function returning the status type returns
// the Go status, or Missing where the library opened lacks the function
// (its address is 0). One returning anything else (const char * is a Go
// string, void nothing) returns it and ok, false where the function is
// missing.
//
// status.txt names the status codes:
//
//	status cufftResult Result cufftResult   C type, Go type, how an unknown code prints: cufftResult(17)
//	CUFFT_SUCCESS 0 Success                 C name, value, Go name
//
// "-backend lib-status" writes zstatus.go: the status type, a constant per
// code named as the table says (bare names in every package: Success,
// InvalidPlan, LengthNotMultiple), Missing (-1<<31, no library's code),
// and String, which prints the C name.
//
// status.txt's directives say what the public package's docs show, and
// its Error's one difference, the Text field (lib-status ignores them):
//
//	public cuBLAS cuBLASLt                   the library's name, then the others sharing its codes
//	example NotSupported cublasGemmEx Gemm   the docs' example: a code, a C function, operations
//	text alone|coded <the field's comment>   a Text field, printed as the code alone (it names
//	                                         the code) or coded, as "Text (C name)"
//
// "-backend lib-public" writes the public package's zstatus.go: its Result
// (a constant per code, Result and the Go name: ResultInvalidSize, as the
// raw one; String and Error, so that errors.Is matches a code), its Error
// (Op, Call, Code, Text where the table says, Err, Detail; Error, Unwrap,
// and Is for a Result), open and opened, which open the package's dl.Lazy
// (its lib, or cuBLASLt's) with dl.Cause's error, and, without a text
// line, check, which turns a raw status into an Error (lib.Lacks says
// what a Missing function is). Every package's errors are alike but for
// those lines, so one template writes them; the package's errors.go keeps
// what is its own: the sentinels its codes match (the map sentinels),
// errorf, named, and with a text line its check, which asks the library
// for the text. The //go:generate line is in the file with the package
// comment (cufft.go).
//
// How a package opens: the public package (cufft) declares its
// dl.Library (where the file is looked for) and a dl.Lazy of it and the
// generated Table; it calls Lazy.Open before its first call, which opens
// the file once per process and resolves the table. A required function
// the file lacks (// required) fails Open: "PATH is not cuFFT: it lacks
// cufftCreate". Any other missing function leaves its address 0: only its
// calls fail, the public package turning Missing into "PATH has no
// cufftSetWorkArea" (Lazy.Lacks). The public package keeps its safe layer
// and passes the C function's name with each call's status to its check.
//
// internal/lib/<name>/gen.go carries the //go:generate lines, so that
// go generate ./internal/lib/... reproduces zcalls.go and zstatus.go.
//
// The libraries to come fit the same way: cuBLAS's two files are two
// library lines in one prototypes.txt (library Table cublas, then library
// LtTable cublasLt Lt), two Lazys in package cublas, one status type
// (cublasStatus_t) for both; cublasGemmEx's 19 parameters are within
// purego's 32. ncclGetErrorString and ncclGetLastError, and
// nvrtcGetErrorString, return const char *: Go strings, and ok. Their
// handles (cublasHandle_t, ncclComm_t, nvrtcProgram) and enumerations go
// into libTypes.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"strings"
	"text/template"
)

func main() {
	in := flag.String("in", "prototypes.txt", "table to read: prototypes.txt, or enums.txt for the enums backends")
	out := flag.String("out", "", "file to write (default standard output)")
	backend := flag.String("backend", "purego", "what to emit: syms, purego, cgo (from prototypes); enums, enums-c (from enums); lib (from a library's prototypes.txt), lib-status, lib-public (from its status.txt)")
	pkg := flag.String("pkg", "driver", "for -backend enums: the Go package whose enumerations to emit; for lib, lib-status and lib-public: the package written")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("gen: ")

	src, err := generate(*in, *backend, *pkg, "internal/driver/gen "+strings.Join(os.Args[1:], " "))
	if err != nil {
		log.Fatal(err)
	}
	if *out == "" {
		os.Stdout.Write(src)
		return
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// generate runs backend over the table in, as command.
func generate(in, backend, pkg, command string) ([]byte, error) {
	if _, ok := libTemplates[backend]; ok {
		return generateLib(in, backend, pkg, command)
	}
	text, ok := templates[backend]
	if !ok {
		return nil, fmt.Errorf("unknown backend %q", backend)
	}
	f, err := os.Open(in)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var data any
	if strings.HasPrefix(backend, "enums") {
		enums, err := parseEnums(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in, err)
		}
		var mine []enum
		for _, e := range enums {
			if e.Package == pkg || backend == "enums-c" {
				mine = append(mine, e)
			}
		}
		data = struct {
			Package string
			Enums   []enum
		}{pkg, mine}
	} else {
		protos, err := parseProtos(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", in, err)
		}
		data = protos
	}
	fm := template.FuncMap{"header": func() string {
		return "// Code generated by " + command + "; DO NOT EDIT."
	}, "short": shortName}
	for k, v := range funcs {
		fm[k] = v
	}
	var buf bytes.Buffer
	if err := template.Must(template.New(backend).Funcs(fm).Parse(text)).Execute(&buf, data); err != nil {
		return nil, err
	}
	if backend == "enums-c" {
		return buf.Bytes(), nil
	}
	src, err := format.Source(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting output: %v\n%s", err, buf.Bytes())
	}
	return src, nil
}
