package compute

import (
	"strings"
	"testing"
)

// TestSoftmaxApplyWaits: in every type's Softmax and LogSoftmax source,
// _apply (launched as _stats' programmatic dependent on devices from
// sm_90) waits before it reads the chunks' statistics, and _stats lets
// it start. The fake runs kernels one after another, where a read before
// the wait would still see the statistics; on the GPU it would not.
func TestSoftmaxApplyWaits(t *testing.T) {
	for _, k := range softmaxSources() {
		name, src := k.name, k.source
		t.Run(name, func(t *testing.T) {
			apply := kernelBody(t, src, name+"_apply(")
			wait, read := strings.Index(apply, "gocuda_pdl_wait();"), strings.Index(apply, "gocuda_stats_in[")
			if wait < 0 || read < 0 || wait > read {
				t.Errorf("%s_apply: the wait (at %d) must come before the first read of the statistics (at %d)", name, wait, read)
			}
			if stats := kernelBody(t, src, name+"_stats("); !strings.Contains(stats, "gocuda_pdl_trigger();") {
				t.Errorf("%s_stats does not let its dependent start", name)
			}
		})
	}
}

// softmaxSources is the Softmax and LogSoftmax kernels' sources of every
// float type, by their names.
func softmaxSources() []struct{ name, source string } {
	var out []struct{ name, source string }
	for _, d := range dtypes {
		if !d.float {
			continue
		}
		for _, logarithm := range []bool{false, true} {
			name := softmaxName(d.name, logarithm)
			out = append(out, struct{ name, source string }{name, softmaxSource(d, name, logarithm)})
		}
	}
	return out
}

// kernelBody returns the text of src from the kernel whose name and
// opening parenthesis are head to the next kernel's "extern", or the end.
func kernelBody(t *testing.T, src, head string) string {
	t.Helper()
	i := strings.Index(src, head)
	if i < 0 {
		t.Fatalf("no kernel %q in the source", head)
	}
	body := src[i:]
	if j := strings.Index(body, "extern \"C\""); j >= 0 {
		body = body[:j]
	}
	return body
}
