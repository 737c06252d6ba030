package rendezvous

// Error is an error of this package: input that cannot be, or ranks that
// could not meet. Package nccl turns it into its own Error, matching
// cuda.ErrInvalidValue or nccl.ErrRendezvous, in one place.
type Error struct {
	// Invalid reports input that cannot be (a size, rank, address or
	// launcher's variable); otherwise the ranks could not meet.
	Invalid bool
	// Ctx is the context's error when the rendezvous ended with its
	// context, else nil.
	Ctx error
	// Detail says what was wrong, in words.
	Detail string
}

func (e *Error) Error() string { return e.Detail }

// Unwrap returns the context's error, so that an error of a rendezvous
// that ran out of time matches context.DeadlineExceeded.
func (e *Error) Unwrap() error { return e.Ctx }
