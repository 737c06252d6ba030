package nccl_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
	"github.com/gocuda/cuda/nccl"
)

// TestStrings: every object prints what it is (its type, size, device and
// state), in use, closed, zero and nil, as fmt.Println shows it; a
// UniqueID prints its size, never its bytes.
func TestStrings(t *testing.T) {
	requireNCCL(t)
	ctx := cudatest.Context(t)
	dev := ctx.Device().String()
	c := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	defer c.Close()
	closedComm := must(nccl.NewComm(ctx, must(nccl.NewUniqueID())(t), 1, 0))(t)
	must(0, closedComm.Close())(t)
	b := must(cuda.Alloc[float32](ctx, 1024))(t)
	defer b.Free()
	r := must(c.Register(b))(t)
	defer r.Close()
	closedReg := must(c.Register(b))(t)
	must(0, closedReg.Close())(t)
	a := must(nccl.Alloc(ctx, 256))(t)
	defer a.Free()
	freed := must(nccl.Alloc(ctx, 3<<20))(t)
	must(0, freed.Free())(t)
	id := must(nccl.NewUniqueID())(t)
	for _, tt := range []struct {
		name string
		v    fmt.Stringer
		want string // a regular expression matching all of it
	}{
		{"comm", c, `^nccl\.Comm\{rank 0 of 1, ` + dev + `\}$`},
		{"closed comm", closedComm, `^nccl\.Comm\{rank 0 of 1, ` + dev + `, closed\}$`},
		{"zero comm", new(nccl.Comm), `^nccl\.Comm\{zero\}$`},
		{"nil comm", (*nccl.Comm)(nil), `^nccl\.Comm\(nil\)$`},
		{"registration", r, `^nccl\.Registration\{4\.0 KiB, rank 0 of 1, ` + dev + `\}$`},
		{"closed registration", closedReg, `^nccl\.Registration\{4\.0 KiB, rank 0 of 1, ` + dev + `, closed\}$`},
		{"zero registration", new(nccl.Registration), `^nccl\.Registration\{zero\}$`},
		{"nil registration", (*nccl.Registration)(nil), `^nccl\.Registration\(nil\)$`},
		{"allocation", a, `^nccl\.Allocation\{256 bytes, ` + dev + `\}$`},
		{"freed allocation", freed, `^nccl\.Allocation\{3\.0 MiB, ` + dev + `, closed\}$`},
		{"zero allocation", new(nccl.Allocation), `^nccl\.Allocation\{zero\}$`},
		{"nil allocation", (*nccl.Allocation)(nil), `^nccl\.Allocation\(nil\)$`},
		{"id", id, `^nccl\.UniqueID\{128 bytes\}$`},
		{"zero id", nccl.UniqueID{}, `^nccl\.UniqueID\{zero\}$`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.v.String()
			if !regexp.MustCompile(tt.want).MatchString(got) {
				t.Errorf("String() = %q, want %s", got, tt.want)
			}
			if p := fmt.Sprint(tt.v); p != got {
				t.Errorf("fmt.Sprint = %q, String() = %q", p, got)
			}
		})
	}
	// The bytes of an id appear nowhere fmt prints it as a value or text.
	var secret nccl.UniqueID
	for i := range secret {
		secret[i] = byte(i*7 + 1)
	}
	head := secret[:6]
	forms := []string{fmt.Sprintf("%x", head), strings.Trim(fmt.Sprint(head), "[]"), strings.Trim(fmt.Sprintf("%#v", head), "[]byte{}")}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X"} {
		for _, v := range []any{secret, &secret, struct{ ID nccl.UniqueID }{secret}, []nccl.UniqueID{secret}} {
			got := fmt.Sprintf(verb, v)
			for _, form := range forms {
				if strings.Contains(strings.ToLower(got), form) {
					t.Errorf("Sprintf(%q) of a UniqueID shows its bytes: %s", verb, got)
				}
			}
		}
	}
}
