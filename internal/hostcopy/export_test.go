package hostcopy

import "time"

// PipeCopy is one goroutine's copy of a part, as a copy worker makes it.
func PipeCopy(dst, src []byte, streaming bool) { pipeCopy(dst, src, streaming) }

// TraceParts has every part the copy workers or their caller copy report
// when it started and ended and who copied it (a worker's number, or -1
// for the caller); nil stops it. Call it with no copy under way.
func TraceParts(f func(by int, start, end time.Time)) { partTrace = f }
