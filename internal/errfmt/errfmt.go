// Package errfmt is the one shape of the errors of packages cuda, nccl,
// nvrtc, cublas and safetensors. Each has an Error type with the same
// fields (Op, Call, Code, Err, Detail; safetensors, which calls no library,
// Op, Err and Detail), whose Unwrap returns the gocuda sentinel it matches
// and whose Is matches the library's own result codes, and whose text
// Message writes:
//
//	lib: Op: Call: code (text): Detail   an error the library returned
//	lib: Op: sentinel: Detail            an error gocuda caught first
package errfmt

// Message writes an error's text. code is the library's name and text for
// its result ("" when the library was not called, or said nothing).
func Message(lib, op, call, code string, sentinel error, detail string) string {
	msg := lib + ": " + op
	if call != "" {
		msg += ": " + call
	}
	switch {
	case code != "":
		msg += ": " + code
	case sentinel != nil:
		msg += ": " + sentinel.Error()
	}
	if detail != "" {
		msg += ": " + detail
	}
	return msg
}
