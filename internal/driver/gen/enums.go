package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// enum is one block of enums.txt: a C enumeration and the values gocuda
// names.
type enum struct {
	CType, GoType, Package, Prefix string
	Values                         []enumValue
}

type enumValue struct {
	CName  string // CUDA_ERROR_INVALID_VALUE
	Value  int
	GoName string // the Go constant: the block's prefix and the line's name
	Name   string // the line's name, without the prefix
	Text   string // the driver's description, or a comment
}

// parseEnums reads enums.txt.
func parseEnums(r io.Reader) ([]enum, error) {
	var enums []enum
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if f[0] == "enum" {
			if len(f) != 4 && len(f) != 5 {
				return nil, fmt.Errorf("line %d: want enum <C type> <Go type> <package> [<prefix>], got %q", n, line)
			}
			e := enum{CType: f[1], GoType: f[2], Package: f[3]}
			if len(f) == 5 {
				e.Prefix = f[4]
			}
			enums = append(enums, e)
			continue
		}
		if len(enums) == 0 {
			return nil, fmt.Errorf("line %d: a value before any enum line", n)
		}
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want <C name> <value> <Go name> [<text>], got %q", n, line)
		}
		v, err := strconv.Atoi(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: value of %s: %w", n, f[0], err)
		}
		e := &enums[len(enums)-1]
		for _, old := range e.Values {
			if old.CName == f[0] || old.Value == v || old.Name == f[2] {
				return nil, fmt.Errorf("line %d: %s repeats %s (%d)", n, f[0], old.CName, old.Value)
			}
		}
		text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, f[0])), f[1]))
		text = strings.TrimSpace(strings.TrimPrefix(text, f[2]))
		e.Values = append(e.Values, enumValue{CName: f[0], Value: v, GoName: e.Prefix + f[2], Name: f[2], Text: text})
	}
	return enums, sc.Err()
}

// shortName is a result's name in the fake's C source: the C name without
// CUDA_ERROR_ or CUDA_ (INVALID_VALUE, SUCCESS).
func shortName(c string) string {
	return strings.TrimPrefix(strings.TrimPrefix(c, "CUDA_ERROR_"), "CUDA_")
}
