package nd

import (
	"errors"
	"fmt"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/compute"
)

// The fold of a block of axes in the middle of a contiguous array: outer
// slabs of mid rows of inner elements, each column of each slab folded
// into one element of the (outer, inner) result, without the copy that
// moving the axes last would take. Each thread folds a chunk of one
// column, in order, adjacent threads adjacent columns (so that a warp
// reads 32 neighbours at once); the chunks' partial results are folded by
// a second kernel, in chunk order: deterministic, as compute's reductions.

// middleThreads is about the threads that fill a GPU: the first kernel
// cuts the columns into as many chunks as take it there.
const middleThreads = 1 << 17

// middleFits reports whether the fold of outer×mid×inner over mid is
// the middle fold's to do: whether its second kernel, a thread for each
// of the outer×inner results, each folding the chunks of its column in
// turn, has few chunks to fold (at most 64). Where it would have more
// (a few columns, 5×100,003×3: 6,250 chunks for each of 15 threads took
// a millisecond on an H100), a permuted copy and compute's rows are
// faster.
func middleFits(outer, mid, inner int) bool {
	chunks, _ := middleChunks(outer, mid, inner)
	return chunks <= 64
}

// middleChunks returns how many chunks each column is cut into, and
// their length.
func middleChunks(outer, mid, inner int) (chunks, chunk int) {
	chunks = min(max(middleThreads/(outer*inner), 1), max(mid/16, 1))
	chunk = (mid + chunks - 1) / chunks
	return (mid + chunk - 1) / chunk, chunk
}

// middleFold folds src, outer×mid×inner, over mid into dst, outer×inner.
func middleFold[T Elem](what string, dst, src *cuda.DeviceBuffer[T], outer, mid, inner int, s *cuda.Stream) (err error) {
	t := ctypeOf[T]()
	acc := accOf(t) // max and min too: every value of T is one of its accumulator's
	if what == "all" || what == "any" {
		acc = "uint8"
	}
	chunks, chunk := middleChunks(outer, mid, inner)
	part, free, err := allocAcc(acc, outer*chunks*inner, s)
	if err != nil {
		return err
	}
	defer func() {
		if e := free(); e != nil {
			err = errors.Join(err, e)
		}
	}()
	k1, k2, err := middleKernels(what, t, acc)
	if err != nil {
		return err
	}
	if err := k1.LaunchN(s, outer*chunks*inner, src, int64(mid), int64(inner), int64(chunk), int64(chunks), part); err != nil {
		return err
	}
	return k2.Launch(s, part, int64(chunks), int64(inner), int64(mid), dst)
}

// allocAcc allocates n elements of the accumulator type named, in stream
// order on s.
func allocAcc(name string, n int, s *cuda.Stream) (any, func() error, error) {
	switch name {
	case "float32":
		b, err := cuda.AllocAsync[float32](s, n)
		return b, retried(b.Free), err
	case "float64":
		b, err := cuda.AllocAsync[float64](s, n)
		return b, retried(b.Free), err
	case "int64":
		b, err := cuda.AllocAsync[int64](s, n)
		return b, retried(b.Free), err
	case "uint64":
		b, err := cuda.AllocAsync[uint64](s, n)
		return b, retried(b.Free), err
	}
	b, err := cuda.AllocAsync[uint8](s, n)
	return b, retried(b.Free), err
}

// retried is free, tried again where it fails, as freed does.
func retried(free func() error) func() error {
	return func() error {
		err := free()
		if err != nil {
			free()
		}
		return err
	}
}

// middleOps are each fold's identity, combination of a and b, and value
// of an element x, in the accumulator's type V; and whether the result is
// divided by the count (mean).
func middleOp(what string, t ctype, acc string) (identity, combine, value string) {
	v := ctypes[acc].value
	lowest, highest := limits(t)
	nanFirst := ""
	if t.float {
		nanFirst = "a != a ? a : b != b ? b : "
	}
	switch what {
	case "sum", "mean":
		return "0", "a + b", "(" + v + ")x"
	case "prod":
		return "1", "a * b", "(" + v + ")x"
	case "max":
		return lowest, nanFirst + "(a > b ? a : b)", "(" + v + ")x"
	case "min":
		return highest, nanFirst + "(a < b ? a : b)", "(" + v + ")x"
	case "all":
		return "1", "a & b", "x != 0"
	}
	return "0", "a | b", "x != 0" // any
}

// limits returns the C of T's lowest and highest values: infinities for
// the floats.
func limits(t ctype) (lowest, highest string) {
	switch t.name {
	case "float32", "float16", "bfloat16":
		return "-__int_as_float(0x7f800000)", "__int_as_float(0x7f800000)"
	case "float64":
		return "-__longlong_as_double(0x7ff0000000000000LL)", "__longlong_as_double(0x7ff0000000000000LL)"
	case "int8":
		return "-128", "127"
	case "int16":
		return "-32768", "32767"
	case "int32":
		return "(-2147483647 - 1)", "2147483647"
	case "int64":
		return "(-9223372036854775807LL - 1)", "9223372036854775807LL"
	case "uint8":
		return "0", "255"
	case "uint16":
		return "0", "65535"
	case "uint32":
		return "0", "4294967295u"
	}
	return "0", "18446744073709551615ull"
}

// middleKernels returns the two kernels of a middle fold of t.
func middleKernels(what string, t ctype, acc string) (*compute.Elementwise, *compute.Elementwise, error) {
	identity, combine, value := middleOp(what, t, acc)
	v := ctypes[acc].value
	fold := func(a, b string) string {
		return fmt.Sprintf("{ const %[1]s a = %[2]s, b = %[3]s; r = %[4]s; }", v, a, b, combine)
	}
	k1, err := rowKernel("middle1", what, t, func() compute.ElementwiseSpec {
		return compute.ElementwiseSpec{Name: "nd_middle_" + what + "_" + t.name,
			InParams:  fmt.Sprintf("raw %s src, int64 mid, int64 inner, int64 chunk, int64 chunks", t.name),
			OutParams: fmt.Sprintf("raw %s part", acc),
			// Element i of part is (outer o, chunk c, column j).
			Operation: fmt.Sprintf(`const long long j = i %% inner, q = i / inner, c = q %% chunks, o = q / chunks;
const long long k1 = (c + 1) * chunk < mid ? (c + 1) * chunk : mid;
%[1]s r = %[2]s;
for (long long k = c * chunk; k < k1; k++) { const auto x = src[(o * mid + k) * inner + j]; %[3]s }
part[i] = r;`, v, identity, fold("r", value))}
	})
	if err != nil {
		return nil, nil, err
	}
	post := "r"
	if what == "mean" {
		post = fmt.Sprintf("r / (%s)mid", v)
	}
	k2, err := rowKernel("middle2", what, t, func() compute.ElementwiseSpec {
		return compute.ElementwiseSpec{Name: "nd_middle_fold_" + what + "_" + t.name,
			InParams:  fmt.Sprintf("raw %s part, int64 chunks, int64 inner, int64 mid", acc),
			OutParams: t.name + " y",
			Operation: fmt.Sprintf(`const long long j = i %% inner, o = i / inner;
%[1]s r = %[2]s;
for (long long c = 0; c < chunks; c++) { const %[1]s x = part[(o * chunks + c) * inner + j]; %[3]s }
y = %[4]s;`, v, identity, fold("r", "x"), post)}
	})
	return k1, k2, err
}
