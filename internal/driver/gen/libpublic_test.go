package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const publicHeader = "status fooStatus_t Result fooStatus\n"

func TestParseLibPublic(t *testing.T) {
	const codes = "FOO_OK 0 Ok\nFOO_BAD 7 Bad\n"
	for _, tt := range []struct {
		name, text string
		want       libPublic
	}{
		{"none", codes, libPublic{}},
		{"name alone", "public FOO\nexample Bad fooRun Run\n" + codes, libPublic{Name: "FOO", Example: "Bad", Call: "fooRun", Ops: []string{"Run"}}},
		{"sharers and ops", "public cuFOO cuFOOLt cuFOOMg\nexample Bad fooRun Run Plan.Run\n" + codes,
			libPublic{Name: "cuFOO", Sharers: []string{"cuFOOLt", "cuFOOMg"}, Example: "Bad", Call: "fooRun", Ops: []string{"Run", "Plan.Run"}}},
		{"text alone", "text alone the library's  name and text\n" + codes, libPublic{Text: "alone", TextNote: "the library's name and text"}},
		{"text coded", "text coded FOO's text\n" + codes, libPublic{Text: "coded", TextNote: "FOO's text"}},
		{"after the codes", codes + "public FOO\n", libPublic{Name: "FOO"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseLibStatus(strings.NewReader(publicHeader + tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Public, tt.want) {
				t.Errorf("parsed %+v, want %+v", s.Public, tt.want)
			}
			if len(s.Codes) != 2 {
				t.Errorf("the directives took codes: %+v", s.Codes)
			}
		})
	}
	for _, tt := range []struct{ name, text, want string }{
		{"public without a name", "public", "want one line public"},
		{"two public lines", "public FOO\npublic BAR", "want one line public"},
		{"example without operations", "example Bad fooRun", "want one line example"},
		{"two example lines", "example Bad fooRun Run\nexample Bad fooRun Run", "want one line example"},
		{"text without a comment", "text alone", "want one line text"},
		{"text printed how", "text both the text", "want one line text"},
		{"two text lines", "text alone a\ntext coded b", "want one line text"},
		{"before the status line", "public FOO\n" + publicHeader, "before the status line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text := publicHeader + tt.text
			if strings.HasSuffix(tt.text, publicHeader) {
				text = tt.text
			}
			_, err := parseLibStatus(strings.NewReader(text + "\nFOO_OK 0 Ok\n"))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseLibStatus(%q) = %v, want an error saying %q", text, err, tt.want)
			}
		})
	}
}

func TestPublicCodes(t *testing.T) {
	for _, tt := range []struct{ name, text, want string }{
		{"no public line", "example Bad fooRun Run\nFOO_OK 0 Ok\nFOO_BAD 7 Bad", "needs the public and example lines"},
		{"no example line", "public FOO\nFOO_OK 0 Ok\nFOO_BAD 7 Bad", "needs the public and example lines"},
		{"example no code", "public FOO\nexample Worse fooRun Run\nFOO_OK 0 Ok\nFOO_BAD 7 Bad", "example Worse is no code"},
		{"no success", "public FOO\nexample Bad fooRun Run\nFOO_BAD 7 Bad", "no code 0"},
		{"good", "public FOO\nexample Bad fooRun Run\nFOO_OK 0 Ok\nFOO_BAD 7 Bad", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseLibStatus(strings.NewReader(publicHeader + tt.text))
			if err != nil {
				t.Fatal(err)
			}
			example, success, err := s.publicCodes()
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want == "" && (example.CName != "FOO_BAD" || success.GoName != "Ok"):
				t.Errorf("example %+v, success %+v", example, success)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("publicCodes() = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestPublicWords(t *testing.T) {
	for _, tt := range []struct{ in, fn, want string }{
		{"cuBLAS", "article", "a"},
		{"NCCL", "article", "an"},
		{"NVRTC", "article", "an"},
		{"CUDA", "article", "a"},
		{"FOO", "article", "an"},
		{"oneFOO", "article", "an"},
		{"cublasStatus_t", "kind", "status"},
		{"curandStatus_t", "kind", "status"},
		{"cufftResult", "kind", "result"},
		{"ncclResult_t", "kind", "result"},
	} {
		got := codeKind(tt.in)
		if tt.fn == "article" {
			got = article(tt.in)
		}
		if got != tt.want {
			t.Errorf("%s(%q) = %q, want %q", tt.fn, tt.in, got, tt.want)
		}
	}
	long := strings.Repeat("word ", 40)
	for _, line := range strings.Split(docComment(long), "\n") {
		if len(line) > 76 || !strings.HasPrefix(line, "// word") {
			t.Errorf("docComment line %q: want // and words within 76 columns", line)
		}
	}
}

// TestGenerateLibPublic: -backend lib-public over each internal/lib
// package's status.txt gives the zstatus.go committed in the public
// package, as go generate would; and what differs between packages comes
// from the table.
func TestGenerateLibPublic(t *testing.T) {
	tables, err := filepath.Glob("../../lib/*/status.txt")
	if err != nil || len(tables) == 0 {
		t.Fatal(tables, err)
	}
	for _, status := range tables {
		pkg := filepath.Base(filepath.Dir(status))
		t.Run(pkg, func(t *testing.T) {
			in := "../internal/lib/" + pkg + "/status.txt"
			command := "internal/driver/gen -in " + in + " -backend lib-public -pkg " + pkg + " -out zstatus.go"
			got, err := generate(status, "lib-public", pkg, command)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("../../..", pkg, "zstatus.go"))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("%s/zstatus.go is not what go generate makes of %s: run go generate ./%s", pkg, status, pkg)
			}
			gen, err := os.ReadFile(filepath.Join("../../..", pkg, pkg+".go"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(gen), "//go:generate go run ../"+command+"\n") {
				t.Errorf("%s/%s.go lacks the line //go:generate go run ../%s", pkg, pkg, command)
			}
		})
	}

	dir := t.TempDir()
	for _, tt := range []struct{ name, text string }{
		{"none", ""},
		{"alone", "text alone the library's name and text for the code\n"},
		{"coded", "text coded FOO's text for the code\n"},
	} {
		t.Run("text "+tt.name, func(t *testing.T) {
			in := filepath.Join(dir, tt.name+".txt")
			table := publicHeader + "public BAR BARLt\nexample Bad fooRun Run Plan.Run\n" + tt.text + "FOO_OK 0 Ok\nFOO_BAD 7 Bad\n"
			if err := os.WriteFile(in, []byte(table), 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := generate(in, "lib-public", "foo", "gen")
			if err != nil {
				t.Fatal(err)
			}
			got := string(src)
			for _, want := range []string{
				"// Result is a BAR status code (fooStatus_t), which BARLt shares, named\n// Result as every package's status type is.",
				"\terrors.Is(err, foo.ResultBad)\n",
				"ResultOk  = Result(clib.Ok)  // FOO_OK\n",
				"ResultBad = Result(clib.Bad) // FOO_BAD\n",
				"such as FOO_BAD.\n",
				`Op     string // the gocuda operation, such as "Run" or "Plan.Run"`,
				`Call   string // the library function, such as "fooRun"; "" if BAR was not called`,
				`Code   Result // the library's status; 0 if it was not called`,
				"if e.Code != ResultOk {",
				`return errfmt.Message("foo", e.Op, e.Call, code, e.Err, e.Detail)`,
				`clib "github.com/gocuda/cuda/internal/lib/foo"`,
				"func open(op string) error { return opened(op, &lib) }",
			} {
				if !strings.Contains(got, want) {
					t.Errorf("the output lacks %q:\n%s", want, got)
				}
			}
			printed := map[string]string{
				"none":  "code = e.Code.String()",
				"alone": "code = e.Text",
				"coded": `code = fmt.Sprintf("%s (%s)", e.Text, e.Code)`,
			}[tt.name]
			if !strings.Contains(got, printed) {
				t.Errorf("the output prints the code otherwise than %s:\n%s", printed, got)
			}
			if hasText := strings.Contains(got, "\tText   string //"); hasText != (tt.name != "none") {
				t.Errorf("Text field present %v, want %v", hasText, tt.name != "none")
			}
			// A package with a Text field asks the library for it in a
			// check of its own.
			if hasCheck := strings.Contains(got, "func check(op, name string, r clib.Result) error {"); hasCheck != (tt.name == "none") {
				t.Errorf("check generated %v, want %v", hasCheck, tt.name == "none")
			}
			if hasFmt := strings.Contains(got, "\"fmt\""); hasFmt != (tt.name == "coded") {
				t.Errorf("fmt imported %v, want %v", hasFmt, tt.name == "coded")
			}
		})
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte(publicHeader+"FOO_OK 0 Ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := generate(bad, "lib-public", "foo", "gen"); err == nil || !strings.Contains(err.Error(), "bad.txt") {
		t.Errorf("a table without its public lines gave %v, want an error naming it", err)
	}
}
