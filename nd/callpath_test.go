package nd

import (
	"testing"

	"github.com/gocuda/cuda/internal/cudatest"
)

// BenchmarkCallPath times nd's own part of an AddInto of 1024 float32 (the
// call_into case of issue 50's table): the operands, the shape check and
// the plan, without the launch (compute's and the driver's), so that the
// host's cost of nd's work shows on any machine, the fake's included.
func BenchmarkCallPath(b *testing.B) {
	s := cudatest.Stream(b, cudatest.Context(b))
	mk := func() *Array[float32] {
		a, err := Zeros[float32](s, 1024)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { a.Free() })
		return a
	}
	x, y, z := mk(), mk(), mk()
	b.ReportAllocs()
	for b.Loop() {
		var buf [2]operand
		ins, err := operands(buf[:], "AddInto", x, y)
		if err != nil {
			b.Fatal(err)
		}
		if !broadcastsTo(z.layout, ins) {
			b.Fatal("shapes")
		}
		var o operand
		if err := operandInto(&o, "AddInto", "dst", z); err != nil {
			b.Fatal(err)
		}
		e := addExpr(ctypeOf[float32]())
		for j := range ins {
			if overlaps(&ins[j], &o) {
				b.Fatal("overlap")
			}
		}
		if _, err := planFor("AddInto", e, &o, ins); err != nil {
			b.Fatal(err)
		}
	}
}
