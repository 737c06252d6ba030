//go:build gocuda_research

package cuda

import (
	"math"

	"github.com/gocuda/cuda/internal/hostcopy"
)

// The hooks of the research benchmarks (staging_research_bench_test.go),
// which sweep what the pipeline keeps fixed. Call them with no transfer
// under way.

// SetPipeSplit sets the least number of chunks a pipelined transfer is cut
// into (1 to 16), and returns the previous value.
func SetPipeSplit(n int) int {
	old := pipeSplit
	pipeSplit = n
	return old
}

// SetPipeGrain sets the least chunk a pipelined transfer is cut into, the
// least number of chunks and the least copy part, and returns a function
// that puts them back.
func SetPipeGrain(minChunk, split, part int) (restore func()) {
	oldChunk, oldSplit, oldPart := minPipeChunk, pipeSplit, hostcopy.SetMinPart(part)
	minPipeChunk, pipeSplit = minChunk, split
	return func() {
		minPipeChunk, pipeSplit = oldChunk, oldSplit
		hostcopy.SetMinPart(oldPart)
	}
}

// SetRotateDownloads sets whether each pipelined download starts its slots
// where the last one's ended, and returns a function that puts it back.
func SetRotateDownloads(on bool) (restore func()) {
	old := rotateDownloads
	rotateDownloads = on
	return func() { rotateDownloads = old }
}

// SetCopyStreaming makes the staging pipeline's copies use streaming
// stores at every size (on) or at none, and returns a function that puts
// the sizes back.
func SetCopyStreaming(on bool) (restore func()) {
	old := streamBelow
	for d := range streamBelow {
		streamBelow[d] = 0
		if on {
			streamBelow[d] = math.MaxInt
		}
	}
	return func() { streamBelow = old }
}

// SetFreshPages sets whether a download advises huge pages over its
// destination and whether it populates the destination's missing pages
// ahead of the copies (freshpages.go), and returns a function that puts
// both back.
func SetFreshPages(advise, populate bool) (restore func()) {
	oldAdvise, oldPopulate := adviseHuge, populateFresh
	adviseHuge, populateFresh = advise, populate
	return func() { adviseHuge, populateFresh = oldAdvise, oldPopulate }
}
