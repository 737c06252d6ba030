// Package attach lets gocuda's other packages tie what they keep per
// context (compute's loaded kernels) to the context's Close, so that a
// user has no release call to forget. Package cuda sets OnClose when it
// loads; nothing else writes it.
package attach

// OnClose registers release to run when ctx, a *cuda.Context, is closed,
// before the context lets go of anything else. key names the registration:
// a second one under the same key keeps the first. A release that fails
// fails that Close and stays registered, so that the next Close tries it
// again. It returns an error for a nil, zero or closed context.
var OnClose func(ctx any, key any, release func() error) error
