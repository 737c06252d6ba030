package describe

import (
	"testing"

	"github.com/gocuda/cuda/internal/lifetime"
)

func TestObject(t *testing.T) {
	for _, c := range []struct {
		st    lifetime.Status
		parts []string
		want  string
	}{
		{lifetime.Held, []string{"3 elements", "cuda:0"}, "x.T{3 elements, cuda:0}"},
		{lifetime.Closed, []string{"cuda:0"}, "x.T{cuda:0, closed}"},
		{lifetime.Zero, nil, "x.T{zero}"},
	} {
		if got := Object("x.T", c.st, c.parts...); got != c.want {
			t.Errorf("Object(%v, %q) = %q, want %q", c.st, c.parts, got, c.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1: "1 byte", 40: "40 bytes", 4096: "4.0 KiB", 3 << 19: "1.5 MiB", 1 << 31: "2.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
