package rendezvous_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gocuda/cuda/nccl/internal/rendezvous"
)

// scripted serves each connection on a loopback port with fn, until t
// ends, and returns the address.
func scripted(t *testing.T, fn func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				fn(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestPromiseRank0Garbage: a rank reads rank 0's answer strictly: a
// status no rank 0 sends, a refusal with no reason or one cut short, an
// id cut short are errors in words, at once or with the time given, never
// a refusal padded with zeros nor a hang.
func TestPromiseRank0Garbage(t *testing.T) {
	// Room for a loaded machine: the answer comes at once, and a hang
	// runs to defaultTimeout, a minute, far past limit+slack.
	const limit, slack = 2 * time.Second, 10 * time.Second
	for _, tt := range []struct {
		name   string
		answer []byte
		says   string
		not    string // what the error must not say
	}{
		{"unknown status", []byte{7, 3, 'a', 'b', 'c'}, "answered rank 1 with 0x7, which is no rendezvous's answer", "refused"},
		{"another program", []byte("HTTP/1.1 400 Bad Request\r\n\r\n"), "answered rank 1 with 0x48", "\x00"},
		{"refusal with no reason", []byte{1}, "refused rank 1, and closed the connection before saying why", ""},
		{"refusal cut short", []byte{1, 50, 'a', 'b'}, `refused rank 1: "ab", cut short (2 bytes of 50)`, "\x00"},
		{"refusal", append([]byte{1, 9}, "no reason"...), "refused rank 1: no reason", ""},
		{"id cut short", append([]byte{0}, make([]byte, 10)...), "rank 0 closed the connection while sending the id", ""},
		{"zero id", append([]byte{0}, make([]byte, 128)...), "sent an empty id", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := scripted(t, func(c net.Conn) {
				io.ReadFull(c, make([]byte, len("gocuda-nccl-rendezvous 1\n")+8))
				c.Write(tt.answer)
			})
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			start := time.Now()
			_, err := rendezvous.Share(ctx, rendezvous.Job{Rank: 1, Size: 2, Addr: addr}, defaultTimeout, newID)
			wantFailed(t, err, tt.says, nil)
			if tt.not != "" && strings.Contains(err.Error(), tt.not) {
				t.Errorf("err = %q; want it not to say %q", err, tt.not)
			}
			if d := time.Since(start); d > limit+slack {
				t.Errorf("took %v, given %v", d, limit)
			}
		})
	}
}

// TestPromiseStoreGarbage: a rank reads torchrun's store strictly: an
// answer to WAIT that is not "stop waiting", a value too large to be an
// id (not allocated), a value cut short or of another length, an ADD cut
// short are errors in words, within the time given.
func TestPromiseStoreGarbage(t *testing.T) {
	u64 := func(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }
	idAndSize := binary.LittleEndian.AppendUint32(append([]byte{1}, make([]byte, 127)...), 2)
	for _, tt := range []struct {
		name    string
		answers [][]byte // to the WAIT, the GET and the ADD, in turn
		says    string
	}{
		{"wait answered wrong", [][]byte{{9}}, "answered a wait with 9"},
		{"huge value", [][]byte{{0}, u64(1 << 62)}, "the store sent a value of 4611686018427387904 bytes"},
		{"value cut short", [][]byte{{0}, append(u64(132), 1, 2, 3)}, "EOF"},
		{"value of another length", [][]byte{{0}, append(u64(5), 1, 2, 3, 4, 5)}, "holds 5 bytes"},
		{"add cut short", [][]byte{{0}, append(u64(132), idAndSize...), {1, 0, 0}}, "EOF"},
		{"came twice", [][]byte{{0}, append(u64(132), idAndSize...), u64(2)}, "came twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr := scripted(t, func(c net.Conn) {
				greeting := make([]byte, 10) // validation and ping
				if _, err := io.ReadFull(c, greeting); err != nil {
					return
				}
				c.Write(greeting[6:]) // the ping's number back
				buf := make([]byte, 4096)
				for _, a := range tt.answers {
					if _, err := c.Read(buf); err != nil { // a query
						return
					}
					c.Write(a)
				}
			})
			const limit, slack = 2 * time.Second, 10 * time.Second // as TestPromiseRank0Garbage's
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			defer cancel()
			start := time.Now()
			_, err := rendezvous.Share(ctx, rendezvous.Job{Rank: 1, Size: 2, Addr: addr, TorchStore: true, Attempt: tt.name}, defaultTimeout, newID)
			wantFailed(t, err, tt.says, nil)
			if d := time.Since(start); d > limit+slack {
				t.Errorf("took %v, given %v", d, limit)
			}
		})
	}
}

// TestPromiseSizeBounds: a size out of range says the range, too many as
// too few.
func TestPromiseSizeBounds(t *testing.T) {
	for _, size := range []int{0, -1, 1<<30 + 1} {
		_, err := rendezvous.Share(context.Background(), rendezvous.Job{Size: size, Addr: "a:1"}, defaultTimeout, newID)
		wantInvalid(t, err, "want at least 1 and at most 1073741824")
	}
}
