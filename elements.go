package cuda

// The element constraints of gocuda's generic operations, declared here
// once so that a name means one set of types in every package. Each admits
// types defined on Go's numbers (`type Celsius float32` is a ~float32);
// Float16 and BFloat16 are types of their own, admitted by name.

// Integer is every integer element type.
type Integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Float is Go's floating-point types, as golang.org/x/exp/constraints.Float.
type Float interface{ ~float32 | ~float64 }

// AnyFloat is every floating-point element type: Go's and the half types.
type AnyFloat interface{ Float | Float16 | BFloat16 }

// Number is every numeric element type.
type Number interface{ Integer | AnyFloat }
