package cuda

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"
)

// typeChecks caches, per element type, why the type cannot live in device
// memory ("" when it can), for plain use and for reinterpretation.
var typeChecks sync.Map // map[typeUse]string

type typeUse struct {
	t           reflect.Type
	reinterpret bool
}

// checkElem returns an ErrInvalidValue error unless T is plain data:
// numbers, and arrays and structs of them. Pointers, strings, slices, maps,
// interfaces, funcs and chans hold addresses of the Go heap that mean nothing
// on the device (and that the garbage collector must see). With reinterpret,
// bool is refused too: not every byte is a valid bool.
func checkElem[T any](op string, reinterpret bool) error {
	t := reflect.TypeFor[T]()
	if isNumber(t.Kind()) { // the common case, without the map's hashing
		return nil
	}
	key := typeUse{t, reinterpret}
	why, ok := typeChecks.Load(key)
	if !ok {
		why, _ = typeChecks.LoadOrStore(key, whyNotPlain(key.t, key.t.String(), reinterpret))
	}
	if why != "" {
		return errorf(op, ErrInvalidValue, "%s", why)
	}
	return nil
}

// isNumber reports whether k is a kind of number.
func isNumber(k reflect.Kind) bool {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}

func whyNotPlain(t reflect.Type, path string, reinterpret bool) string {
	if isNumber(t.Kind()) {
		return ""
	}
	switch t.Kind() {
	case reflect.Bool:
		if reinterpret {
			return fmt.Sprintf("%s is a bool, which cannot be reinterpreted from arbitrary bytes", path)
		}
		return ""
	case reflect.Array:
		return whyNotPlain(t.Elem(), path+"[0]", reinterpret)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if why := whyNotPlain(f.Type, path+"."+f.Name, reinterpret); why != "" {
				return why
			}
		}
		return ""
	default:
		return fmt.Sprintf("%s is a %s, which cannot live in device memory: use numbers, and arrays and structs of numbers", path, t.Kind())
	}
}

// sizeOf returns the size of T in bytes.
func sizeOf[T any]() uintptr {
	var zero T
	return unsafe.Sizeof(zero)
}

func alignOf[T any]() uintptr {
	var zero T
	return unsafe.Alignof(zero)
}

// hostPtr returns the address of s's first element for the driver.
func hostPtr[T any](s []T) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }

// bytesOf views a slice of plain data as its bytes.
func bytesOf[T any](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(sizeOf[T]()))
}
