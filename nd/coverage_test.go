package nd_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// coverageDoc is the table of NumPy's and CuPy's most used functions and
// what package nd offers for each.
const coverageDoc = "../docs/nd-coverage.md"

// ndNames returns the package's exported top-level names (functions, types,
// constants, variables) and, by receiver type, the names of its exported
// methods, read from its non-test source files.
func ndNames(t *testing.T) (top map[string]bool, methods map[string]map[string]bool) {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	top = map[string]bool{}
	methods = map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(".", name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil || len(d.Recv.List) == 0 {
					top[d.Name.Name] = true
					continue
				}
				recv := receiverType(d.Recv.List[0].Type)
				if methods[recv] == nil {
					methods[recv] = map[string]bool{}
				}
				methods[recv][d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						top[s.Name.Name] = s.Name.IsExported()
					case *ast.ValueSpec:
						for _, n := range s.Names {
							top[n.Name] = n.IsExported()
						}
					}
				}
			}
		}
	}
	return top, methods
}

// receiverType names a method's receiver type: Array for *Array[T].
func receiverType(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// coverageRow is one row of the table: | # | NumPy / CuPy | gocuda |
// counted | notes |.
type coverageRow struct {
	num                   int
	numpy, gocuda, status string
	notes                 string
}

// splitCells splits a markdown table line at its unescaped pipes.
func splitCells(line string) []string {
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	cells = append(cells, strings.TrimSpace(cur.String()))
	// A row starts and ends with a pipe: drop the empty cells outside them.
	if len(cells) >= 2 && cells[0] == "" && cells[len(cells)-1] == "" {
		cells = cells[1 : len(cells)-1]
	}
	return cells
}

// TestCoverageDoc: every gocuda name docs/nd-coverage.md gives exists in
// package nd (nd.X a top-level name, a.X a method of Array, ).X a method
// of one of the package's types), the table has rows 1 to 100 in order,
// each either covered with a name or "not yet", and the count and the
// list of the missing ones at its end agree with the table.
func TestCoverageDoc(t *testing.T) {
	data, err := os.ReadFile(coverageDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	top, methods := ndNames(t)

	var rows []coverageRow
	for i, line := range strings.Split(doc, "\n") {
		cells := splitCells(line)
		if !strings.HasPrefix(line, "|") || len(cells) == 0 {
			continue
		}
		n, err := strconv.Atoi(cells[0])
		if err != nil {
			continue // a header or a separator
		}
		if len(cells) != 5 {
			t.Errorf("line %d: %d cells, want 5 (# | NumPy / CuPy | gocuda | counted | notes): %s", i+1, len(cells), line)
			continue
		}
		rows = append(rows, coverageRow{n, cells[1], cells[2], cells[3], cells[4]})
	}
	if len(rows) != 100 {
		t.Errorf("%d rows, want 100", len(rows))
	}

	code := regexp.MustCompile("`([^`]*)`")
	pkgRef := regexp.MustCompile(`\bnd\.([A-Za-z_]\w*)`)
	varMethod := regexp.MustCompile(`\b(a|b|view|mask|idx)\.([A-Z]\w*)`)
	chained := regexp.MustCompile(`\)\.([A-Z]\w*)`)
	anyMethod := func(name string) bool {
		for _, ms := range methods {
			if ms[name] {
				return true
			}
		}
		return false
	}
	var missing []string
	miss := func(where, name string) {
		if s := where + ": " + name; !slices.Contains(missing, s) {
			missing = append(missing, s)
		}
	}
	// nd.X anywhere in the document, in code.
	for _, m := range code.FindAllStringSubmatch(doc, -1) {
		for _, r := range pkgRef.FindAllStringSubmatch(m[1], -1) {
			if !top[r[1]] {
				miss("document", "nd."+r[1])
			}
		}
		for _, r := range chained.FindAllStringSubmatch(m[1], -1) {
			if !anyMethod(r[1]) {
				miss("document", ")."+r[1])
			}
		}
	}

	var covered, composed, notYet []int
	for i, r := range rows {
		where := "row " + strconv.Itoa(r.num)
		if r.num != i+1 {
			t.Errorf("%s is at place %d: the rows must be numbered 1 to 100 in order", where, i+1)
		}
		switch r.status {
		case "yes", "composition":
			if r.status == "composition" {
				composed = append(composed, r.num)
			}
			covered = append(covered, r.num)
			spans := code.FindAllStringSubmatch(r.gocuda, -1)
			if len(spans) == 0 {
				t.Errorf("%s (%s) is counted as %s but names nothing in code: %q", where, r.numpy, r.status, r.gocuda)
			}
			for _, m := range spans {
				for _, v := range varMethod.FindAllStringSubmatch(m[1], -1) {
					if !methods["Array"][v[2]] {
						miss(where, v[1]+"."+v[2])
					}
				}
			}
		case "no":
			notYet = append(notYet, r.num)
			if r.gocuda != "not yet" {
				t.Errorf("%s (%s) is counted as no but its gocuda cell is %q, want \"not yet\"", where, r.numpy, r.gocuda)
			}
			if r.notes == "" {
				t.Errorf("%s (%s) is not yet but says not why", where, r.numpy)
			}
		default:
			t.Errorf("%s: counted is %q, want yes, composition or no", where, r.status)
		}
	}
	if len(missing) > 0 {
		t.Errorf("names in %s that package nd does not have:\n\t%s", coverageDoc, strings.Join(missing, "\n\t"))
	}

	// The count at the end.
	m := regexp.MustCompile(`\*\*Covered: (\d+) of (\d+)\*\*`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("no **Covered: N of 100** line")
	}
	if got, _ := strconv.Atoi(m[1]); got != len(covered) {
		t.Errorf("the document says %s covered; the table counts %d", m[1], len(covered))
	}
	if m[2] != strconv.Itoa(len(rows)) {
		t.Errorf("the document says of %s; the table has %d rows", m[2], len(rows))
	}
	cm := regexp.MustCompile(`\((\d+) of them by composition: rows ([^)]*)\)`).FindStringSubmatch(doc)
	if cm == nil {
		t.Errorf("no \"(N of them by composition: rows ...)\" after the count")
	} else {
		var listed []int
		for _, f := range regexp.MustCompile(`\d+`).FindAllString(cm[2], -1) {
			n, _ := strconv.Atoi(f)
			listed = append(listed, n)
		}
		if got, _ := strconv.Atoi(cm[1]); got != len(composed) || !slices.Equal(listed, composed) {
			t.Errorf("the document says %s by composition, rows %v; the table has %d, rows %v", cm[1], listed, len(composed), composed)
		}
	}

	// The ranked list of what is missing: each not-yet row once.
	_, ranked, ok := strings.Cut(doc, "### Not yet, most missed first")
	if !ok {
		t.Fatalf("no \"### Not yet, most missed first\" section")
	}
	item := regexp.MustCompile(`(?m)^\d+\. #(\d+) `)
	var list []int
	for _, r := range item.FindAllStringSubmatch(ranked, -1) {
		n, _ := strconv.Atoi(r[1])
		list = append(list, n)
	}
	sorted := slices.Clone(list)
	slices.Sort(sorted)
	if !slices.Equal(sorted, notYet) {
		t.Errorf("the ranked list names rows %v; the table's not-yet rows are %v", sorted, notYet)
	}
}
