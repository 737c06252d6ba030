package rendezvous

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The rendezvous's messages on rank 0's port. A rank connects to rank 0
// and sends hello: the magic, its rank and the size it was told
// (big-endian uint32s). Rank 0 answers with a status byte, then the ID
// (status ok) or a reason of up to 255 bytes (status refused).
const (
	magic         = "gocuda-nccl-rendezvous 1\n"
	statusOK      = 0
	statusRefused = 1
)

// serve is rank 0's side: it listens on j.Addr's port, on every interface,
// and answers each rank's hello until all have the id. Each connection is
// answered on a goroutine of its own, so that one that says nothing (a
// port scan, a health check) holds up no rank meanwhile.
func serve(ctx context.Context, j Job, id ID) error {
	_, port, _ := net.SplitHostPort(j.Addr)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("", port))
	if err != nil {
		return failed(ctx, "rank 0 cannot listen on port %s: %v", port, err)
	}
	defer ln.Close()
	// Close the listener when ctx ends, which ends Accept, and cut the
	// connections still being answered once every rank has the id.
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	// Answers still under way end (cancel) before serve waits for them.
	var answering sync.WaitGroup
	defer answering.Wait()
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &ranks{served: make([]bool, j.Size), left: j.Size - 1}
	r.served[0] = true
	for {
		conn, err := ln.Accept()
		if err != nil {
			if r.done() {
				return nil // the last rank's answer closed the listener
			}
			if ctx.Err() != nil {
				return failed(ctx, "rank 0 at %s: ranks %s did not come within the time given", j.Addr, r.missing())
			}
			return failed(ctx, "rank 0 at %s: %v", j.Addr, err)
		}
		answering.Go(func() {
			if answer(actx, conn, j.Size, r, id) && r.done() {
				cancel()
				ln.Close()
			}
		})
	}
}

// ranks is which ranks rank 0 has served, under mu.
type ranks struct {
	mu     sync.Mutex
	served []bool
	left   int
}

// take claims rank for a connection, or says why it cannot have it.
func (r *ranks) take(rank, theirs int) (reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	size := len(r.served)
	switch {
	case theirs != size:
		return fmt.Sprintf("rank %d was told the job has %d ranks; rank 0 was told %d", rank, theirs, size)
	case rank <= 0 || rank >= size:
		return fmt.Sprintf("rank %d out of range [1, %d)", rank, size)
	case r.served[rank]:
		return fmt.Sprintf("rank %d came twice", rank)
	}
	r.served[rank] = true
	r.left--
	return ""
}

// giveBack undoes take for a rank that died before it had the id: it may
// come again.
func (r *ranks) giveBack(rank int) {
	r.mu.Lock()
	r.served[rank] = false
	r.left++
	r.mu.Unlock()
}

// done reports whether every rank has the id.
func (r *ranks) done() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.left == 0
}

// missing lists the ranks not served, the first few.
func (r *ranks) missing() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return missing(r.served)
}

// answer reads one hello from conn and sends the id, or the reason it is
// refused. It reports whether it served a rank.
func answer(ctx context.Context, conn net.Conn, size int, r *ranks, id ID) bool {
	defer conn.Close()
	// A rank that connects and says nothing is let go after a while, or
	// when ctx ends.
	conn.SetDeadline(within(ctx, 10*time.Second))
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	hello := make([]byte, len(magic)+8)
	if _, err := io.ReadFull(conn, hello); err != nil || string(hello[:len(magic)]) != magic {
		return false // not a rank of ours, or it died: wait for another
	}
	rank := int(binary.BigEndian.Uint32(hello[len(magic):]))
	theirs := int(binary.BigEndian.Uint32(hello[len(magic)+4:]))
	if reason := r.take(rank, theirs); reason != "" {
		if len(reason) > 255 {
			reason = reason[:255]
		}
		conn.Write(append([]byte{statusRefused, byte(len(reason))}, reason...))
		return false
	}
	if _, err := conn.Write(append([]byte{statusOK}, id[:]...)); err != nil {
		r.giveBack(rank) // it died before reading: it may come again
		return false
	}
	return true
}

// missing lists the ranks not served, the first few.
func missing(served []bool) string {
	var ranks []string
	for r, ok := range served {
		if !ok {
			if len(ranks) == 8 {
				ranks = append(ranks, "...")
				break
			}
			ranks = append(ranks, strconv.Itoa(r))
		}
	}
	return strings.Join(ranks, ", ")
}

// fetch is the other ranks' side: connect to rank 0 (again while it is not
// yet listening), say hello, read the id.
func fetch(ctx context.Context, j Job) (ID, error) {
	var id ID
	gaveUp, err := redial(ctx, j.Addr, func(conn net.Conn) (retry bool, err error) {
		id, retry, err = hello(ctx, conn, j)
		return retry, err
	})
	if gaveUp {
		return ID{}, failed(ctx, "rank %d cannot reach rank 0 at %s within the time given: %v", j.Rank, j.Addr, err)
	}
	return id, err
}

// hello asks rank 0 for the id on conn. retry reports a failure worth
// another try (rank 0 closed the connection before answering: a listener
// from another job, or rank 0 dying and starting again).
func hello(ctx context.Context, conn net.Conn, j Job) (id ID, retry bool, err error) {
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	msg := binary.BigEndian.AppendUint32([]byte(magic), uint32(j.Rank))
	msg = binary.BigEndian.AppendUint32(msg, uint32(j.Size))
	if _, err := conn.Write(msg); err != nil {
		return id, true, err
	}
	var status [1]byte
	if _, err := io.ReadFull(conn, status[:]); err != nil {
		return id, true, fmt.Errorf("rank 0 closed the connection before answering: %v", err)
	}
	if status[0] == statusOK {
		if _, err := io.ReadFull(conn, id[:]); err != nil {
			return id, true, fmt.Errorf("rank 0 closed the connection while sending the id: %v", err)
		}
		if bytes.Equal(id[:], make([]byte, len(id))) {
			return id, false, failed(ctx, "rank 0 at %s sent an empty id", j.Addr)
		}
		return id, false, nil
	}
	// Read strictly: a status rank 0 never sends is another program's
	// answer, not a refusal, and a refusal cut short is said to be, not
	// padded with the zeros of the bytes that never came.
	if status[0] != statusRefused {
		return id, false, failed(ctx, "rank 0 at %s answered rank %d with %#x, which is no rendezvous's answer (another program listens there?)", j.Addr, j.Rank, status[0])
	}
	var n [1]byte
	if _, err := io.ReadFull(conn, n[:]); err != nil {
		return id, false, failed(ctx, "rank 0 at %s refused rank %d, and closed the connection before saying why: %v", j.Addr, j.Rank, err)
	}
	reason := make([]byte, n[0])
	if got, err := io.ReadFull(conn, reason); err != nil {
		return id, false, failed(ctx, "rank 0 at %s refused rank %d: %q, cut short (%d bytes of %d): %v", j.Addr, j.Rank, reason[:got], got, len(reason), err)
	}
	return id, false, failed(ctx, "rank 0 at %s refused rank %d: %s", j.Addr, j.Rank, reason)
}
