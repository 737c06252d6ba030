package rendezvous

import (
	"context"
	"net"
	"time"
)

// redial connects to addr and runs try on the connection, again after a
// pause (from 50 ms, doubling up to a second) while the connection fails
// or try asks for another, until ctx ends; it returns try's error, or,
// having given up as ctx ended, the last error. try owns the connection.
func redial(ctx context.Context, addr string, try func(net.Conn) (retry bool, err error)) (gaveUp bool, _ error) {
	var d net.Dialer
	wait := 50 * time.Millisecond
	for {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			var retry bool
			if retry, err = try(conn); !retry {
				return false, err
			}
		}
		select {
		case <-ctx.Done():
			return true, err
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// within returns the deadline of a step that may take d at most, or less
// when ctx ends first.
func within(ctx context.Context, d time.Duration) time.Time {
	deadline := time.Now().Add(d)
	if c, ok := ctx.Deadline(); ok && c.Before(deadline) {
		return c
	}
	return deadline
}
