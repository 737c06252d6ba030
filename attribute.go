package cuda

import (
	"fmt"
	"slices"
	"strings"
)

//go:generate go run ./internal/driver/gen -in internal/driver/enums.txt -backend enums -pkg cuda -out zenums.go

// Attribute is a device attribute (CUdevice_attribute). The constants
// (zenums.go, generated from internal/driver/enums.txt) follow
// CU_DEVICE_ATTRIBUTE_*; any other value of the driver's enumeration may be
// passed as Attribute(n).
type Attribute int

// String returns the attribute's name without its "Attr" prefix.
func (a Attribute) String() string {
	if s, ok := attributeNames[a]; ok {
		return s
	}
	return fmt.Sprintf("Attribute(%d)", int(a))
}

// ParseAttribute returns the attribute named s, with or without the "Attr"
// prefix, in any case ("MultiprocessorCount", "multiprocessorcount").
func ParseAttribute(s string) (Attribute, error) {
	want := strings.TrimPrefix(strings.ToLower(s), "attr")
	for a, name := range attributeNames {
		if strings.ToLower(name) == want {
			return a, nil
		}
	}
	return 0, errorf("ParseAttribute", ErrInvalidValue, "no device attribute named %q", s)
}

// KnownAttributes returns every attribute this package names, in order.
func KnownAttributes() []Attribute {
	as := make([]Attribute, 0, len(attributeNames))
	for a := range attributeNames {
		as = append(as, a)
	}
	slices.Sort(as)
	return as
}
