package nccl

// LaunchFrom is LaunchFromEnv reading getenv, for the tests.
var LaunchFrom = launchFrom

// WithAttempt returns l naming the attempt a of a torchrun job, as
// LaunchFromEnv reads it from TORCHELASTIC_RUN_ID and
// TORCHELASTIC_RESTART_COUNT.
func WithAttempt(l Launch, a string) Launch {
	l.attempt = a
	return l
}

// JobOf is l as package rendezvous takes it.
var JobOf = Launch.job
