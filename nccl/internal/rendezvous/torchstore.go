package rendezvous

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// torchrun's agent runs a key-value store at MASTER_ADDR:MASTER_PORT for
// the job's processes (PyTorch's TCPStore) and tells them so with
// TORCHELASTIC_USE_AGENT_STORE=True: the port is taken, and rank 0 cannot
// listen on it. There the ranks meet in that store instead, as PyTorch's
// own ranks do: rank 0 sets a key holding the id, the others wait for it,
// read it and set a key of their own, for which rank 0 waits.
//
// A torchStore speaks the store's protocol as PyTorch 2.4 and later do:
// a query is its type's byte and its arguments; a string or byte string
// is its length (8 bytes) and its bytes; numbers are in the host's order
// (little-endian on every platform gocuda runs on). A connection begins
// with a validation (the magic number) and a ping (a number the store
// sends back).
type torchStore struct {
	conn net.Conn
	addr string
}

// The store's query types and its magic number (c10d's TCPStore).
const (
	storeValidate    = 0
	storeSet         = 1
	storeGet         = 3
	storeAdd         = 4
	storeCheck       = 5
	storeWait        = 6
	storePing        = 13
	storeMagic       = 0x3C85F7CE
	storeReady       = 0 // CHECK's answer: every key is set
	storeStopWaiting = 0 // WAIT's answer: every key is set
)

// dialStore connects to torchrun's store at addr, trying again while it
// does not answer, until ctx ends. The calls of the store it returns end
// with ctx once watch is called.
func dialStore(ctx context.Context, addr string) (*torchStore, error) {
	var s *torchStore
	gaveUp, err := redial(ctx, addr, func(conn net.Conn) (bool, error) {
		s = &torchStore{conn: conn, addr: addr}
		retry, err := s.greet(ctx)
		if err != nil {
			conn.Close()
		}
		return retry, err
	})
	switch {
	case gaveUp:
		return nil, fmt.Errorf("torchrun's store at %s did not answer within the time given: %v", addr, err)
	case err != nil:
		return nil, err
	}
	return s, nil
}

// greet validates the connection and pings the store, which must answer
// within 10 seconds. retry reports a failure worth another connection: a
// store that closed it without answering (its queue of connections full,
// as PyTorch's client allows for) rather than one that answered wrong.
func (s *torchStore) greet(ctx context.Context) (retry bool, err error) {
	s.conn.SetDeadline(within(ctx, 10*time.Second))
	defer s.conn.SetDeadline(time.Time{})
	nonce := uint32(os.Getpid())
	q := binary.LittleEndian.AppendUint32([]byte{storeValidate}, storeMagic)
	q = binary.LittleEndian.AppendUint32(append(q, storePing), nonce)
	if _, err := s.conn.Write(q); err != nil {
		return true, err
	}
	var back [4]byte
	if _, err := io.ReadFull(s.conn, back[:]); err != nil {
		return true, fmt.Errorf("%s is not a store of PyTorch 2.4 or later, or not yet one (TORCHELASTIC_USE_AGENT_STORE is set): no answer to a ping: %v", s.addr, err)
	}
	if got := binary.LittleEndian.Uint32(back[:]); got != nonce {
		return false, fmt.Errorf("%s is not a store of PyTorch 2.4 or later (TORCHELASTIC_USE_AGENT_STORE is set): a ping of %d came back as %d", s.addr, nonce, got)
	}
	return false, nil
}

// watch makes the store's calls end when ctx does, until the returned
// function is called.
func (s *torchStore) watch(ctx context.Context) func() bool {
	return context.AfterFunc(ctx, func() { s.conn.SetDeadline(time.Now()) })
}

func (s *torchStore) Close() error { return s.conn.Close() }

// A query is built by appending to its type's byte: a string as its
// length and bytes, a number as its 8 bytes.
func appendString(q []byte, str string) []byte {
	return append(binary.LittleEndian.AppendUint64(q, uint64(len(str))), str...)
}

func (s *torchStore) send(q []byte) error {
	_, err := s.conn.Write(q)
	return err
}

// keysQuery is a query naming several keys (WAIT, CHECK): their count,
// then each key.
func keysQuery(typ byte, keys []string) []byte {
	q := binary.LittleEndian.AppendUint64([]byte{typ}, uint64(len(keys)))
	for _, k := range keys {
		q = appendString(q, k)
	}
	return q
}

// set sets key to value; the store does not answer.
func (s *torchStore) set(key string, value []byte) error {
	return s.send(appendString(appendString([]byte{storeSet}, key), string(value)))
}

// get returns key's value; the key must be set (wait for it first).
func (s *torchStore) get(key string) ([]byte, error) {
	if err := s.send(appendString([]byte{storeGet}, key)); err != nil {
		return nil, err
	}
	var n [8]byte
	if _, err := io.ReadFull(s.conn, n[:]); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint64(n[:])
	if size > 1<<20 {
		return nil, fmt.Errorf("the store sent a value of %d bytes for %s", size, key)
	}
	v := make([]byte, size)
	_, err := io.ReadFull(s.conn, v)
	return v, err
}

// add adds n to the number key holds (0 when not set) and returns the sum.
func (s *torchStore) add(key string, n int64) (int64, error) {
	if err := s.send(binary.LittleEndian.AppendUint64(appendString([]byte{storeAdd}, key), uint64(n))); err != nil {
		return 0, err
	}
	var r [8]byte
	if _, err := io.ReadFull(s.conn, r[:]); err != nil {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(r[:])), nil
}

// wait returns once every key is set; it ends with an error when the
// connection's deadline passes (see watch), after which s is unusable.
func (s *torchStore) wait(keys []string) error {
	if err := s.send(keysQuery(storeWait, keys)); err != nil {
		return err
	}
	var r [1]byte
	if _, err := io.ReadFull(s.conn, r[:]); err != nil {
		return err
	}
	if r[0] != storeStopWaiting {
		return fmt.Errorf("the store answered a wait with %d", r[0])
	}
	return nil
}

// check reports whether every key is set.
func (s *torchStore) check(keys []string) (bool, error) {
	if err := s.send(keysQuery(storeCheck, keys)); err != nil {
		return false, err
	}
	var r [1]byte
	if _, err := io.ReadFull(s.conn, r[:]); err != nil {
		return false, err
	}
	return r[0] == storeReady, nil
}

// storeRounds counts, by store address, attempt and rank, the rendezvous
// this process has made in torchrun's store: each takes keys of its own,
// so that a second communicator of the job never reads the first one's
// id. Every rank makes the same rendezvous in the same order, so their
// counts agree. mu is a leaf.
var storeRounds struct {
	mu sync.Mutex
	n  map[string]int
}

func nextStoreRound(j Job) int {
	storeRounds.mu.Lock()
	defer storeRounds.mu.Unlock()
	if storeRounds.n == nil {
		storeRounds.n = map[string]int{}
	}
	k := j.Addr + "/" + j.Attempt + "/" + strconv.Itoa(j.Rank)
	storeRounds.n[k]++
	return storeRounds.n[k]
}

// shareInStore is Share through torchrun's store at j.Addr, for a
// job of two or more ranks. Rank 0 sets the id, with the size it was
// told, under a key of this rendezvous and waits for each other rank's
// key; the others wait for the id, check the size and add 1 to their own
// key, which tells rank 0 they have it (and a rank that comes twice that
// it did).
func shareInStore(ctx context.Context, j Job, newID func() (ID, error)) (ID, error) {
	prefix := fmt.Sprintf("/gocuda/nccl/%s/%d/", j.Attempt, nextStoreRound(j))
	idKey := prefix + "id"
	rankKey := func(r int) string { return prefix + "rank/" + strconv.Itoa(r) }
	s, err := dialStore(ctx, j.Addr)
	if err != nil {
		return ID{}, failed(ctx, "rank %d: %v", j.Rank, err)
	}
	defer s.Close()
	defer s.watch(ctx)()
	storeErr := func(err error) error {
		return failed(ctx, "rank %d: torchrun's store at %s: %v", j.Rank, j.Addr, err)
	}
	if j.Rank == 0 {
		id, err := newID()
		if err != nil {
			return ID{}, err
		}
		if err := s.set(idKey, binary.LittleEndian.AppendUint32(id[:], uint32(j.Size))); err != nil {
			return ID{}, storeErr(err)
		}
		keys := make([]string, 0, j.Size-1)
		for r := 1; r < j.Size; r++ {
			keys = append(keys, rankKey(r))
		}
		if err := s.wait(keys); err != nil {
			if ctx.Err() != nil {
				return ID{}, failed(ctx, "rank 0, through torchrun's store at %s: ranks %s did not come within the time given", j.Addr, storeMissing(j.Addr, keys))
			}
			return ID{}, storeErr(err)
		}
		return id, nil
	}
	if err := s.wait([]string{idKey}); err != nil {
		if ctx.Err() != nil {
			return ID{}, failed(ctx, "rank %d: rank 0 did not put the id in torchrun's store at %s within the time given", j.Rank, j.Addr)
		}
		return ID{}, storeErr(err)
	}
	v, err := s.get(idKey)
	if err != nil {
		return ID{}, storeErr(err)
	}
	var id ID
	if len(v) != len(id)+4 {
		return ID{}, failed(ctx, "rank %d: torchrun's store at %s holds %d bytes under %s, not an id and a size", j.Rank, j.Addr, len(v), idKey)
	}
	if size := int(binary.LittleEndian.Uint32(v[len(id):])); size != j.Size {
		return ID{}, failed(ctx, "rank %d was told the job has %d ranks; rank 0 was told %d", j.Rank, j.Size, size)
	}
	n, err := s.add(rankKey(j.Rank), 1)
	if err != nil {
		return ID{}, storeErr(err)
	}
	if n > 1 {
		return ID{}, failed(ctx, "rank %d came twice (torchrun's store at %s)", j.Rank, j.Addr)
	}
	copy(id[:], v)
	return id, nil
}

// storeMissing names the first few ranks whose keys are not set, asking
// the store again on a connection of its own (the one that waited ended
// with the time given), for two seconds at most.
func storeMissing(addr string, keys []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := dialStore(ctx, addr)
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	defer s.Close()
	defer s.watch(ctx)()
	var ranks []string
	for i, k := range keys {
		set, err := s.check([]string{k})
		switch {
		case err != nil:
			return strings.Join(append(ranks, "(and more unknown: "+err.Error()+")"), ", ")
		case set:
			continue
		case len(ranks) == 8:
			return strings.Join(append(ranks, "..."), ", ")
		}
		ranks = append(ranks, strconv.Itoa(i+1)) // keys[i] is rank i+1's
	}
	return strings.Join(ranks, ", ")
}
