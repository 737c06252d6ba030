package cudnn

import (
	"unsafe"

	cuda "github.com/gocuda/cuda"
)

// AttentionPlans returns how many attention plans h keeps.
func AttentionPlans(h *Handle) int {
	h.base.Lock()
	defer h.base.Unlock()
	return len(h.raw.attn)
}

// AttentionGraphVariants names the mistakes AttentionGraphVariant can make.
func AttentionGraphVariants() []string { return attnDefects }

// AttentionGraphVariant builds the attention graph of a small causal
// shape (bottom-right, with statistics) with the mistake named (""
// for none), its heuristics and the plan of the first configuration that
// builds one: nil where one does, else the error.
func AttentionGraphVariant(h *Handle, defect string) error {
	const op = "AttentionGraphVariant"
	return h.do(op, nil, func(c *call) (err error) {
		g := &graphPlan{}
		defer func() {
			if derr := g.destroy(op); err == nil {
				err = derr
			}
		}()
		b := &builder{op: op, g: g}
		// "no stats" leaves the statistics out of a graph not asked for
		// them: the one graph cuDNN takes has them virtual.
		k := attnKey{dt: dataHalf, causal: true, stats: defect != "no stats", align: [5]uint8{16, 16, 16, 16, 16}}
		k.shapes = [4][4]int64{{1, 2, 4, 16}, {1, 1, 8, 16}, {1, 1, 8, 16}, {1, 2, 4, 16}}
		k.strides = [4][4]int64{{128, 64, 16, 1}, {128, 128, 16, 1}, {128, 128, 16, 1}, {128, 64, 16, 1}}
		og := b.attnGraph(c.lh, k, attnMasks[0], defect)
		if b.err != nil {
			return b.err
		}
		cfgs, _, err := c.configs(b, og, convKey{dt: dataHalf}, heurModeA, false)
		if err != nil {
			return err
		}
		for _, cfg := range cfgs {
			plan := b.create(bdExecutionPlan)
			b.set(plan, attrPlanHandle, atHandle, 1, unsafe.Pointer(&c.lh))
			b.desc(plan, attrPlanConfig, cfg)
			b.finalize(plan)
			if b.err == nil {
				return nil
			}
			b.err = nil
		}
		return errorf(op, cuda.ErrNotSupported, "no plan")
	})
}

// SetAttentionMasks makes attention try only the causal mask's encoding i
// of attnMasks (0 the current frontend's, 1 the earlier one), and returns
// a function that restores the list.
func SetAttentionMasks(i int) (restore func()) {
	old := attnMasks
	attnMasks = []attnMask{old[i]}
	return func() { attnMasks = old }
}
