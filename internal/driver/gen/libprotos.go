package main

import (
	"bufio"
	"fmt"
	"go/token"
	"go/types"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// libType is how a C type appears in Go.
type libType struct {
	goType string // "" for void
	under  string // for a named type declared in zcalls.go: its underlying type
	float  bool   // passed in floating-point registers
	noVal  bool   // never by value (structures, complex numbers): only pointed to
}

// libTypes are the C types of the libraries' prototypes.
var libTypes = map[string]libType{
	"void":               {},
	"char":               {goType: "byte"},
	"int":                {goType: "int32"},
	"unsigned int":       {goType: "uint32"},
	"unsigned":           {goType: "uint32"},
	"long long":          {goType: "int64"},
	"unsigned long long": {goType: "uint64"},
	"long long int":      {goType: "int64"},
	"int64_t":            {goType: "int64"},
	"uint64_t":           {goType: "uint64"},
	"size_t":             {goType: "uintptr"},
	"float":              {goType: "float32", float: true},
	"double":             {goType: "float64", float: true},
	// The runtime's stream, as the driver's CUstream.
	"cudaStream_t": {goType: "uintptr"},
	// cuFFT (cufft.h)
	"cufftHandle":        {goType: "Handle", under: "int32"},
	"cufftType":          {goType: "int32"},
	"cufftReal":          {goType: "float32", float: true},
	"cufftDoubleReal":    {goType: "float64", float: true},
	"cufftComplex":       {goType: "complex64", noVal: true},
	"cufftDoubleComplex": {goType: "complex128", noVal: true},
	// cuRAND (curand.h)
	"curandGenerator_t": {goType: "Generator", under: "uintptr"},
	"curandRngType_t":   {goType: "int32"},
	"curandOrdering_t":  {goType: "int32"},
	// cuBLAS and cuBLASLt (cublas_api.h, cublasLt.h, library_types.h):
	// handles and descriptors are pointers to opaque structs, never Go
	// memory; the algorithm and the heuristic's result are structs
	// cuBLASLt fills and reads, laid out as the header declares them.
	"cublasHandle_t":                       {goType: "Handle", under: "uintptr"},
	"cublasLtHandle_t":                     {goType: "LtHandle", under: "uintptr"},
	"cublasLtMatmulDesc_t":                 {goType: "LtMatmulDesc", under: "uintptr"},
	"cublasLtMatrixLayout_t":               {goType: "LtMatrixLayout", under: "uintptr"},
	"cublasLtMatmulPreference_t":           {goType: "LtMatmulPreference", under: "uintptr"},
	"cublasLtMatmulAlgo_t":                 {goType: "LtMatmulAlgo", under: "struct{ Data [8]uint64 }", noVal: true},
	"cublasLtMatmulHeuristicResult_t":      {goType: "LtMatmulHeuristicResult", under: "struct {\nAlgo LtMatmulAlgo\nWorkspaceSize uintptr\nState int32\nWavesCount float32\nReserved [4]int32\n}", noVal: true},
	"cublasOperation_t":                    {goType: "int32"},
	"cublasPointerMode_t":                  {goType: "int32"},
	"cublasComputeType_t":                  {goType: "int32"},
	"cublasGemmAlgo_t":                     {goType: "int32"},
	"cublasLtMatmulDescAttributes_t":       {goType: "int32"},
	"cublasLtMatmulPreferenceAttributes_t": {goType: "int32"},
	"libraryPropertyType":                  {goType: "int32"},
	"cudaDataType":                         {goType: "int32"},
	"cudaDataType_t":                       {goType: "int32"},
	// NVRTC (nvrtc.h): a pointer to an opaque struct, never Go memory.
	"nvrtcProgram": {goType: "Program", under: "uintptr"},
	// NCCL (nccl.h): the communicator is a pointer to an opaque struct,
	// never Go memory; the id is 128 bytes, only pointed to here;
	// ncclConfig_t is versioned (it only grows, and NCCL reads the version
	// it is given), so package nccl lays out the version it fills and it
	// goes as void *.
	"ncclComm_t":     {goType: "Comm", under: "uintptr"},
	"ncclUniqueId":   {goType: "UniqueID", under: "[128]byte", noVal: true},
	"ncclConfig_t":   {},
	"ncclDataType_t": {goType: "DataType", under: "int32"},
	"ncclRedOp_t":    {goType: "RedOp", under: "int32"},
}

// libParam is one parameter of a library function.
type libParam struct {
	CName  string // as the prototype names it
	Name   string // the Go parameter
	GoType string
	Arg    string // the argument to purego.SyscallN: uintptr(x), uintptr(unsafe.Pointer(x))
	Float  bool
}

// libReturn is what a library function returns.
type libReturn struct {
	Status bool   // the status type
	GoType string // otherwise: its Go type, "" for void
	Conv   string // how SyscallN's r becomes it, %s for r: "int32(%s)", "dl.String(%s)"
}

// libFunc is one prototype.
type libFunc struct {
	C        string // the prototype, as written (without its comment)
	CName    string // cufftExecC2C
	GoName   string // ExecC2C
	Params   []libParam
	Return   libReturn
	Required bool
	Floats   bool // a parameter goes in a floating-point register: purego.RegisterFunc
}

// libTable is one shared library's functions.
type libTable struct {
	Var      string // the Go name of its *dl.Table: Table
	CPrefix  string // cufft
	GoPrefix string // "", or Lt
	Funcs    []libFunc
}

// libFile is a parsed prototypes.txt.
type libFile struct {
	StatusC, StatusGo string // cufftResult, Result
	Tables            []libTable
	Named             []libNamed // the named types used, in the order met
}

// libNamed is a named Go type zcalls.go declares.
type libNamed struct{ CType, GoType, Under string }

// libStatus is a parsed status.txt.
type libStatus struct {
	CType, GoType, Unknown string
	Codes                  []libCode
	Public                 libPublic // what the public package's file says (lib-public)
}

// libPublic is what status.txt's directives (public, example, text) say
// of the public package's Result and Error, which -backend lib-public
// writes; lib-status ignores them. The package comment (main.go) says
// what the lines mean.
type libPublic struct {
	Name     string   // cuBLAS
	Sharers  []string // cuBLASLt
	Example  string   // a code's Go name: NotSupported
	Call     string   // cublasGemmEx
	Ops      []string // Gemm
	Text     string   // "", alone or coded
	TextNote string   // the Text field's comment
}

type libCode struct {
	CName  string
	Value  int
	GoName string
}

var (
	libLineRE  = regexp.MustCompile(`^([A-Za-z_][\w\s\*]*?)\s*\b(\w+)\s*\((.*)\)\s*;$`)
	libAnnotRE = regexp.MustCompile(`/\*\s*(\w+)\s*\*/`)
	libIdentRE = regexp.MustCompile(`^[A-Za-z_]\w*$`)
)

// libMaxArgs is purego.SyscallN's limit (cublasGemmEx takes 19).
const libMaxArgs = 32

// parseLibProtos reads prototypes.txt.
func parseLibProtos(r io.Reader) (*libFile, error) {
	f := &libFile{}
	named := map[string]bool{}
	goNames := map[string]string{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		switch fields[0] {
		case "status":
			if len(fields) != 3 || f.StatusC != "" || !token.IsExported(fields[2]) {
				return nil, fmt.Errorf("line %d: want one line status <C type> <exported Go type>, got %q", n, line)
			}
			f.StatusC, f.StatusGo = fields[1], fields[2]
			continue
		case "library":
			if len(fields) != 3 && len(fields) != 4 || !token.IsExported(fields[1]) {
				return nil, fmt.Errorf("line %d: want library <exported Go table> <C prefix> [<Go prefix>], got %q", n, line)
			}
			t := libTable{Var: fields[1], CPrefix: fields[2]}
			if len(fields) == 4 {
				t.GoPrefix = fields[3]
			}
			f.Tables = append(f.Tables, t)
			continue
		}
		if len(f.Tables) == 0 || f.StatusC == "" {
			return nil, fmt.Errorf("line %d: a prototype before the status and library lines", n)
		}
		t := &f.Tables[len(f.Tables)-1]
		fn, err := parseLibFunc(line, f, t)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if old, ok := goNames[fn.GoName]; ok {
			return nil, fmt.Errorf("line %d: %s and %s are both %s in Go", n, old, fn.CName, fn.GoName)
		}
		goNames[fn.GoName] = fn.CName
		for _, c := range usedTypes(line) {
			if lt, ok := libTypes[c]; ok && lt.under != "" && !named[c] {
				named[c] = true
				f.Named = append(f.Named, libNamed{c, lt.goType, lt.under})
			}
		}
		t.Funcs = append(t.Funcs, fn)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(f.Tables) == 0 {
		return nil, fmt.Errorf("no library line")
	}
	return f, nil
}

// usedTypes returns the words of a prototype that name types of libTypes.
func usedTypes(line string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(line, func(r rune) bool {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		if _, ok := libTypes[w]; ok {
			out = append(out, w)
		}
	}
	return out
}

// parseLibFunc parses one prototype of table t.
func parseLibFunc(line string, f *libFile, t *libTable) (libFunc, error) {
	fn := libFunc{}
	if rest, ok := strings.CutSuffix(line, "// required"); ok {
		fn.Required, line = true, strings.TrimSpace(rest)
	}
	m := libLineRE.FindStringSubmatch(line)
	if m == nil {
		return fn, fmt.Errorf("not a C prototype: %q", line)
	}
	fn.C, fn.CName = line, m[2]
	base, ok := strings.CutPrefix(fn.CName, t.CPrefix)
	if !ok || base == "" {
		return fn, fmt.Errorf("%s does not start with the library's prefix %s", fn.CName, t.CPrefix)
	}
	fn.GoName = t.GoPrefix + verRE.ReplaceAllString(base, "")
	if !token.IsExported(fn.GoName) {
		return fn, fmt.Errorf("%s: Go name %s is not exported", fn.CName, fn.GoName)
	}
	ret, err := parseLibReturn(m[1], f)
	if err != nil {
		return fn, fmt.Errorf("%s: %w", fn.CName, err)
	}
	fn.Return = ret
	if args := strings.TrimSpace(m[3]); args != "void" && args != "" {
		for a := range strings.SplitSeq(args, ",") {
			p, err := parseLibParam(strings.TrimSpace(a), f)
			if err != nil {
				return fn, fmt.Errorf("%s: %w", fn.CName, err)
			}
			fn.Floats = fn.Floats || p.Float
			fn.Params = append(fn.Params, p)
		}
	}
	if len(fn.Params) > libMaxArgs {
		return fn, fmt.Errorf("%s: %d parameters, more than purego's %d", fn.CName, len(fn.Params), libMaxArgs)
	}
	return fn, nil
}

// splitCType splits a declaration without its name into the base type's
// words (const dropped) and the pointer depth: "const char * const *" is
// "char", 2.
func splitCType(s string) (base string, depth int) {
	var words []string
	for _, w := range strings.Fields(strings.ReplaceAll(s, "*", " * ")) {
		switch w {
		case "const":
		case "*":
			depth++
		default:
			words = append(words, w)
		}
	}
	return strings.Join(words, " "), depth
}

// lookupType returns the Go form of the C base type c.
func lookupType(c string, f *libFile) (libType, error) {
	if c == f.StatusC {
		return libType{goType: f.StatusGo}, nil
	}
	lt, ok := libTypes[c]
	if !ok {
		return lt, fmt.Errorf("unknown C type %q: add it to libTypes", c)
	}
	return lt, nil
}

func parseLibReturn(s string, f *libFile) (libReturn, error) {
	base, depth := splitCType(s)
	if base == f.StatusC && depth == 0 {
		return libReturn{Status: true}, nil
	}
	lt, err := lookupType(base, f)
	switch {
	case err != nil:
		return libReturn{}, err
	case base == "char" && depth == 1:
		return libReturn{GoType: "string", Conv: "dl.String(%s)"}, nil
	case base == "void" && depth == 0:
		return libReturn{}, nil
	case depth == 0 && !lt.float && !lt.noVal:
		return libReturn{GoType: lt.goType, Conv: lt.goType + "(%s)"}, nil
	}
	return libReturn{}, fmt.Errorf("unsupported return type %q", strings.TrimSpace(s))
}

func parseLibParam(s string, f *libFile) (libParam, error) {
	device, deviceOut := false, false
	for _, a := range libAnnotRE.FindAllStringSubmatch(s, -1) {
		switch a[1] {
		case "device":
			device = true
		case "device_out":
			deviceOut = true
		default:
			return libParam{}, fmt.Errorf("unknown annotation %q in %q", a[0], s)
		}
	}
	decl := strings.TrimSpace(libAnnotRE.ReplaceAllString(s, ""))
	// A parameter declared as an array (const void *const Aarray[]) is a
	// pointer to its first element, as C passes it.
	array := false
	if d, ok := strings.CutSuffix(decl, "[]"); ok {
		decl, array = strings.TrimSpace(d), true
	}
	i := strings.LastIndexFunc(decl, func(r rune) bool { return r == ' ' || r == '*' })
	if i < 0 || !libIdentRE.MatchString(decl[i+1:]) {
		return libParam{}, fmt.Errorf("cannot parse parameter %q", s)
	}
	cname := decl[i+1:]
	base, depth := splitCType(decl[:i+1])
	if array {
		depth++
	}
	if base == "" {
		return libParam{}, fmt.Errorf("cannot parse parameter %q", s)
	}
	lt, err := lookupType(base, f)
	if err != nil {
		return libParam{}, err
	}
	p := libParam{CName: cname, Name: goParamName(cname)}
	switch {
	case device && depth >= 1:
		// Whatever it points to (an array of device pointers too).
		p.GoType, p.Arg = "uintptr", p.Name
	case device:
		return p, fmt.Errorf("parameter %q: /*device*/ marks a pointer to device memory", s)
	case deviceOut && depth == 2:
		// Host memory where C writes a device address (ncclMemAlloc's
		// void **ptr): a *uintptr, so that the address is never Go's
		// pointer.
		p.GoType, p.Arg = "*uintptr", "uintptr(unsafe.Pointer("+p.Name+"))"
	case deviceOut:
		return p, fmt.Errorf("parameter %q: /*device_out*/ marks a pointer to a device pointer (T **)", s)
	case depth == 0 && (lt.goType == "" || lt.noVal):
		return p, fmt.Errorf("parameter %q: %s is not passed by value", s, base)
	case depth == 0:
		p.GoType, p.Float = lt.goType, lt.float
		p.Arg = "uintptr(" + p.Name + ")"
		if p.GoType == "uintptr" {
			p.Arg = p.Name
		}
	case depth <= 2:
		elem := lt.goType
		if elem == "" {
			elem = "unsafe.Pointer"
			depth--
		}
		p.GoType = strings.Repeat("*", depth) + elem
		p.Arg = "uintptr(unsafe.Pointer(" + p.Name + "))"
		if p.GoType == "unsafe.Pointer" {
			p.Arg = "uintptr(" + p.Name + ")"
		}
	default:
		return p, fmt.Errorf("parameter %q: more than two levels of pointers", s)
	}
	return p, nil
}

// goParamName is the Go name of a C parameter: lowercase first, in camel
// case (rng_type is rngType), and not a keyword, a predeclared name, or a
// name the generated bodies use.
func goParamName(c string) string {
	words := strings.Split(strings.Trim(c, "_"), "_")
	if words[0] == "" {
		return "arg"
	}
	name := strings.ToLower(words[0][:1]) + words[0][1:]
	for _, w := range words[1:] {
		if w != "" {
			name += strings.ToUpper(w[:1]) + w[1:]
		}
	}
	switch {
	case token.IsKeyword(name), types.Universe.Lookup(name) != nil, name == "fn", name == "r", name == "ret", name == "ok", name == "unsafe", name == "purego", name == "dl":
		return name + "Arg"
	}
	return name
}

// parseLibStatus reads status.txt.
func parseLibStatus(r io.Reader) (*libStatus, error) {
	var s *libStatus
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if f[0] == "status" {
			if len(f) != 4 || s != nil || !token.IsExported(f[2]) {
				return nil, fmt.Errorf("line %d: want one line status <C type> <exported Go type> <unknown code's name>, got %q", n, line)
			}
			s = &libStatus{CType: f[1], GoType: f[2], Unknown: f[3]}
			continue
		}
		if s == nil {
			return nil, fmt.Errorf("line %d: a code before the status line", n)
		}
		if ok, err := s.Public.directive(f); ok || err != nil {
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: want <C name> <value> <Go name>, got %q", n, line)
		}
		v, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: value of %s: %w", n, f[0], err)
		}
		if !token.IsExported(f[2]) || f[2] == "Missing" {
			return nil, fmt.Errorf("line %d: Go name %q: want an exported name other than Missing", n, f[2])
		}
		for _, old := range s.Codes {
			if old.CName == f[0] || old.Value == v || old.GoName == f[2] {
				return nil, fmt.Errorf("line %d: %s repeats %s (%d, %s)", n, f[0], old.CName, old.Value, old.GoName)
			}
		}
		s.Codes = append(s.Codes, libCode{CName: f[0], Value: v, GoName: f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if s == nil || len(s.Codes) == 0 {
		return nil, fmt.Errorf("no status line, or no codes")
	}
	return s, nil
}

// directive parses a directive line of status.txt's (its fields f) into p;
// ok is false where the line is none (a code's).
func (p *libPublic) directive(f []string) (ok bool, err error) {
	switch f[0] {
	case "public":
		if len(f) < 2 || p.Name != "" {
			return true, fmt.Errorf("want one line public <library's name> [<libraries sharing its codes>...], got %q", strings.Join(f, " "))
		}
		p.Name = f[1]
		if len(f) > 2 {
			p.Sharers = f[2:]
		}
	case "example":
		if len(f) < 4 || p.Example != "" {
			return true, fmt.Errorf("want one line example <code's Go name> <C function> <operation>..., got %q", strings.Join(f, " "))
		}
		p.Example, p.Call, p.Ops = f[1], f[2], f[3:]
	case "text":
		if len(f) < 3 || f[1] != "alone" && f[1] != "coded" || p.Text != "" {
			return true, fmt.Errorf("want one line text alone|coded <the Text field's comment>, got %q", strings.Join(f, " "))
		}
		p.Text, p.TextNote = f[1], strings.Join(f[2:], " ")
	default:
		return false, nil
	}
	return true, nil
}

// publicCodes checks what -backend lib-public needs of s: the public and
// example lines, the example a code of s's, and a code 0 (success, which
// Error takes for "not called"); it returns the example and success codes.
func (s *libStatus) publicCodes() (example, success libCode, err error) {
	if s.Public.Name == "" || s.Public.Example == "" {
		return example, success, fmt.Errorf("lib-public needs the public and example lines")
	}
	var okExample, okSuccess bool
	for _, c := range s.Codes {
		if c.GoName == s.Public.Example {
			example, okExample = c, true
		}
		if c.Value == 0 {
			success, okSuccess = c, true
		}
	}
	switch {
	case !okExample:
		return example, success, fmt.Errorf("example %s is no code of the table's", s.Public.Example)
	case !okSuccess:
		return example, success, fmt.Errorf("no code 0, which an Error whose library was not called has")
	}
	return example, success, nil
}
