package cuda

import (
	"bytes"
	"strconv"
	"strings"
)

// ptxParam is a kernel parameter as a PTX .entry line declares it:
// ".param .f32 x", ".param .u64 .ptr .global .align 1 p", or
// ".param .align 4 .b8 s[12]" for a struct passed by value.
type ptxParam struct {
	class byte    // 'u', 's', 'b' or 'f'
	width int     // bits of the element type
	size  uintptr // bytes: the element's times the array's length
}

// parsePTXParams returns the parameters of each kernel (.entry) in PTX
// text, up to its first NUL, where the driver stops reading. A kernel
// whose declaration it cannot read is left out: a kernel not in the map
// is checked only as far as the driver can say.
func parsePTXParams(ptx []byte) map[string][]ptxParam {
	kernels := map[string][]ptxParam{}
	if i := bytes.IndexByte(ptx, 0); i >= 0 {
		ptx = ptx[:i]
	}
	text := stripComments(string(ptx))
	for {
		i := strings.Index(text, ".entry")
		if i < 0 {
			return kernels
		}
		text = text[i+len(".entry"):]
		open := strings.IndexByte(text, '(')
		brace := strings.IndexByte(text, '{')
		if open < 0 || (brace >= 0 && brace < open) {
			continue // a kernel without a parameter list takes none
		}
		name := strings.TrimSpace(text[:open])
		closeAt := strings.IndexByte(text[open:], ')')
		if closeAt < 0 || name == "" || strings.ContainsAny(name, " \t\n") {
			continue
		}
		params, ok := parseParamList(text[open+1 : open+closeAt])
		if ok {
			kernels[name] = params
		}
		text = text[open+closeAt:]
	}
}

// stripComments returns PTX text with its comments, // to the end of the
// line and /* to */, made spaces (PTX has no string literals to hold them).
func stripComments(text string) string {
	if !strings.Contains(text, "/") {
		return text
	}
	b := []byte(text)
	for i := 0; i+1 < len(b); i++ {
		var end string
		switch {
		case b[i] == '/' && b[i+1] == '/':
			end = "\n"
		case b[i] == '/' && b[i+1] == '*':
			end = "*/"
		default:
			continue
		}
		j := bytes.Index(b[i+2:], []byte(end))
		stop := len(b) // an unclosed comment runs to the end
		if j >= 0 {
			stop = i + 2 + j + len(end)
			if end == "\n" {
				stop-- // keep the line's end
			}
		}
		for k := i; k < stop; k++ {
			b[k] = ' '
		}
		i = stop - 1
	}
	return string(b)
}

func parseParamList(list string) ([]ptxParam, bool) {
	var params []ptxParam
	for _, decl := range strings.Split(list, ",") {
		fields := strings.Fields(decl)
		if len(fields) == 0 {
			if len(params) == 0 && strings.TrimSpace(list) == "" {
				return nil, true
			}
			return nil, false
		}
		var p ptxParam
		count := uintptr(1)
		for _, f := range fields {
			if len(f) >= 3 && f[0] == '.' && strings.ContainsRune("usbf", rune(f[1])) {
				if w, err := strconv.Atoi(f[2:]); err == nil && w%8 == 0 && w > 0 {
					p.class, p.width = f[1], w
				}
			}
		}
		last := fields[len(fields)-1]
		if lb := strings.IndexByte(last, '['); lb >= 0 && strings.HasSuffix(last, "]") {
			n, err := strconv.Atoi(last[lb+1 : len(last)-1])
			if err != nil || n <= 0 {
				return nil, false
			}
			count = uintptr(n)
		}
		if fields[0] != ".param" || p.width == 0 {
			return nil, false
		}
		p.size = uintptr(p.width/8) * count
		params = append(params, p)
	}
	return params, true
}
