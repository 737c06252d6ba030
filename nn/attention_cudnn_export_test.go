package nn

// SetAttnBackend forces EnvAttention's choice for the tests ("own",
// "cudnn", "auto", or "" to read the environment) and returns a function
// that restores the choice.
func SetAttnBackend(mode string) (restore func()) {
	old, _ := attnBackend.Load().(string)
	attnBackend.Store(mode)
	return func() { attnBackend.Store(old) }
}

// AttnCUDNNRuns returns how many attentions cuDNN has run.
func AttnCUDNNRuns() int64 { return attnCUDNNRuns.Load() }

// AttnCUDNNHandles returns how many cuDNN handles attention holds open.
func AttnCUDNNHandles() int {
	attnDNN.mu.Lock()
	defer attnDNN.mu.Unlock()
	return len(attnDNN.handles)
}
