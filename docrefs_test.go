package cuda_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocReferences: where a comment of the library names a method or
// field of one of its own types as Type.Name, the type has it (a comment
// once sent readers to Context.CanAccessPeer, which is Device's), and a
// receiver's own size in a comment is its own (WriteTo once spoke of
// dst.ByteSize() for src).
func TestDocReferences(t *testing.T) {
	ref := regexp.MustCompile(`\b([A-Z][A-Za-z0-9]*)\.([A-Z][A-Za-z0-9]*)\b`)
	sizeRef := regexp.MustCompile(`\b([a-z][A-Za-z0-9]*)\.(ByteSize|Len)\(\)`)
	for _, dir := range []string{".", "nvrtc", "nccl", "cublas", "safetensors", "compute"} {
		t.Run(dir, func(t *testing.T) {
			fset := token.NewFileSet()
			files := map[string]*ast.File{}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				name := e.Name()
				if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
					continue
				}
				f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
				if err != nil {
					t.Fatal(err)
				}
				files[name] = f
			}
			// The package's types and, for each, its methods and fields.
			members := map[string]map[string]bool{}
			for _, f := range files {
				for _, d := range f.Decls {
					switch d := d.(type) {
					case *ast.GenDecl:
						for _, s := range d.Specs {
							ts, ok := s.(*ast.TypeSpec)
							if !ok {
								continue
							}
							if members[ts.Name.Name] == nil {
								members[ts.Name.Name] = map[string]bool{}
							}
							if st, ok := ts.Type.(*ast.StructType); ok {
								for _, fl := range st.Fields.List {
									for _, n := range fl.Names {
										members[ts.Name.Name][n.Name] = true
									}
									if len(fl.Names) == 0 { // embedded: its members are promoted; trust them
										members[ts.Name.Name]["*"] = true
									}
								}
							}
							if it, ok := ts.Type.(*ast.InterfaceType); ok {
								for _, m := range it.Methods.List {
									for _, n := range m.Names {
										members[ts.Name.Name][n.Name] = true
									}
								}
							}
						}
					}
				}
			}
			for _, f := range files {
				for _, d := range f.Decls {
					fd, ok := d.(*ast.FuncDecl)
					if !ok || fd.Recv == nil {
						continue
					}
					recv := fd.Recv.List[0].Type
					if s, ok := recv.(*ast.StarExpr); ok {
						recv = s.X
					}
					if ix, ok := recv.(*ast.IndexExpr); ok {
						recv = ix.X
					}
					if ix, ok := recv.(*ast.IndexListExpr); ok {
						recv = ix.X
					}
					if id, ok := recv.(*ast.Ident); ok && members[id.Name] != nil {
						members[id.Name][fd.Name.Name] = true
					}
				}
			}
			for name, f := range files {
				for _, d := range f.Decls {
					fd, ok := d.(*ast.FuncDecl)
					if !ok || fd.Doc == nil {
						continue
					}
					names := map[string]bool{}
					for _, fl := range []*ast.FieldList{fd.Recv, fd.Type.Params} {
						if fl == nil {
							continue
						}
						for _, p := range fl.List {
							for _, n := range p.Names {
								names[n.Name] = true
							}
						}
					}
					for _, m := range sizeRef.FindAllStringSubmatch(fd.Doc.Text(), -1) {
						if !names[m[1]] {
							t.Errorf("%s: the doc of %s speaks of %s.%s(), and %s is none of its parameters", filepath.Join(dir, name), fd.Name.Name, m[1], m[2], m[1])
						}
					}
				}
				for _, cg := range f.Comments {
					for _, m := range ref.FindAllStringSubmatch(cg.Text(), -1) {
						typ, member := m[1], m[2]
						ms, ok := members[typ]
						if !ok || ms["*"] || ms[member] {
							continue
						}
						t.Errorf("%s: a comment names %s.%s, but %s has no %s", filepath.Join(dir, name), typ, member, typ, member)
					}
				}
			}
		})
	}
}
