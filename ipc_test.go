package cuda_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/internal/cudatest"
)

func TestIPCHandleText(t *testing.T) {
	var h cuda.IPCHandle
	for i := range h {
		h[i] = byte(i * 7)
	}
	text := must(h.MarshalText())(t)
	var back cuda.IPCHandle
	if err := back.UnmarshalText(text); err != nil || back != h {
		t.Fatalf("round trip: %v, %x", err, back)
	}
	var e cuda.IPCEventHandle
	for _, bad := range []string{"", "abc", strings.Repeat("zz", 64)} {
		if err := back.UnmarshalText([]byte(bad)); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("IPCHandle.UnmarshalText(%q): %v", bad, err)
		}
		if err := e.UnmarshalText([]byte(bad)); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("IPCEventHandle.UnmarshalText(%q): %v", bad, err)
		}
	}
	if back != h {
		t.Error("a failed UnmarshalText changed the handle")
	}
}

// TestIPCExportErrors: only whole buffers gocuda allocated are exported.
func TestIPCExportErrors(t *testing.T) {
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	b := must(cuda.Alloc[float32](ctx, 64))(t)
	defer b.Free()
	slice := must(b.Slice(8, 8))(t)
	ordered := must(cuda.AllocAsync[float32](s, 64))(t)
	defer ordered.Free()
	raw := must(cuda.FromRaw[float32](ctx, b.Ptr(), 64))(t)
	defer raw.Free()
	for name, buf := range map[string]*cuda.DeviceBuffer[float32]{"slice": slice, "stream-ordered": ordered, "FromRaw": raw, "zero": {}} {
		if _, err := buf.IPCHandle(); !errors.Is(err, cuda.ErrInvalidValue) {
			t.Errorf("%s: IPCHandle: %v, want ErrInvalidValue", name, err)
		}
	}
	if _, err := ctx.NewEvent(cuda.EventInterprocess); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("NewEvent(EventInterprocess) without EventDisableTiming: %v", err)
	}
	timed := must(ctx.NewEvent(cuda.EventDisableTiming))(t)
	defer timed.Close()
	if _, err := timed.IPCHandle(); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "EventInterprocess") {
		t.Errorf("IPCHandle of an event made without EventInterprocess: %v, want ErrInvalidValue naming the flag", err)
	}
	var zero cuda.Event
	if _, err := zero.IPCHandle(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("IPCHandle of the zero Event: %v", err)
	}
}

// TestIPCSameProcess: the driver opens no handle in the process that
// exported it; the fake, asked to, does, so that an opened buffer's
// lifetime is tested: its data is the exporter's, its size is checked
// against the allocation, Free closes the mapping once.
func TestIPCSameProcess(t *testing.T) {
	f := cudatest.Fake(t)
	if f == nil {
		return
	}
	ctx := cudatest.Context(t)
	b := must(cuda.FromHost(ctx, []float32{1, 2, 3, 4}))(t)
	defer b.Free()
	h := must(b.IPCHandle())(t)
	if _, err := cuda.OpenIPC[float32](ctx, h, 4); !errors.Is(err, cuda.Result(201)) {
		t.Fatalf("OpenIPC in the exporting process: %v, want CUDA_ERROR_INVALID_CONTEXT", err)
	}
	f.SetIPCSameProcess(true)
	defer f.SetIPCSameProcess(false)
	live := f.Live("ipc")
	if _, err := cuda.OpenIPC[float32](ctx, h, 5); !errors.Is(err, cuda.ErrInvalidValue) || !strings.Contains(err.Error(), "do not fit") {
		t.Errorf("OpenIPC of 5 elements of a 4-element allocation: %v", err)
	}
	if f.Live("ipc") != live {
		t.Errorf("a failed OpenIPC left %d mappings open", f.Live("ipc")-live)
	}
	o := must(cuda.OpenIPC[float32](ctx, h, 4))(t)
	got := make([]float32, 4)
	if err := o.CopyToHost(got); err != nil || got[3] != 4 {
		t.Fatalf("the opened buffer holds %v (%v)", got, err)
	}
	if _, err := o.IPCHandle(); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("exporting an opened buffer: %v", err)
	}
	if err := o.Free(); err != nil {
		t.Fatal(err)
	}
	if err := o.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	if f.Live("ipc") != live {
		t.Errorf("Free left the mapping open")
	}
	var bad cuda.IPCHandle
	if _, err := cuda.OpenIPC[float32](ctx, bad, 1); err == nil {
		t.Error("OpenIPC of a handle of zeros succeeded")
	}
	ev := must(ctx.NewEvent(cuda.EventDisableTiming, cuda.EventInterprocess))(t)
	defer ev.Close()
	eh := must(ev.IPCHandle())(t)
	if _, err := cuda.OpenIPCEvent(ctx, eh); err == nil {
		t.Error("OpenIPCEvent in the exporting process succeeded")
	}
}

// TestIPCWithCuPy runs the pair with another framework, both ways, on the
// GPU: CuPy opens a buffer gocuda exported (after an event gocuda
// exported), checks it and writes it; gocuda opens memory CuPy exported.
func TestIPCWithCuPy(t *testing.T) {
	if cudatest.IsFake() {
		t.Skip("the fake's memory is its process's own")
	}
	required := os.Getenv(cudatest.EnvRequireGPU) == "1"
	if err := exec.Command("python3", "-c", "import cupy").Run(); err != nil {
		if required {
			t.Fatalf("GOCUDA_REQUIRE_GPU=1 and no CuPy: %v", err)
		}
		t.Skip("no CuPy")
	}
	ctx := cudatest.Context(t)
	s := cudatest.Stream(t, ctx)
	const n = 1 << 20
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i)
	}
	b := must(cuda.Alloc[float32](ctx, n))(t)
	defer b.Free()
	if err := b.Memset32Async(0, s); err != nil {
		t.Fatal(err)
	}
	if err := b.CopyFromHostAsync(data, s); err != nil {
		t.Fatal(err)
	}
	ev := must(ctx.NewEvent(cuda.EventDisableTiming, cuda.EventInterprocess))(t)
	defer ev.Close()
	if err := ev.Record(s); err != nil {
		t.Fatal(err)
	}
	mh, eh := must(must(b.IPCHandle())(t).MarshalText())(t), must(must(ev.IPCHandle())(t).MarshalText())(t)
	out, err := exec.Command("python3", "testdata/ipc_peer.py", "open", string(mh), "1048576", string(eh)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("CuPy opening gocuda's buffer: %v\n%s", err, out)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]float32, n)
	if err := b.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 2*float32(i) {
			t.Fatalf("after CuPy doubled it, element %d is %v", i, v)
		}
	}

	cmd := exec.Command("python3", "testdata/ipc_peer.py", "export", "1048576")
	stdin := must(cmd.StdinPipe())(t)
	stdout := must(cmd.StdoutPipe())(t)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading CuPy's handles: %v", err)
	}
	fields := strings.Fields(line)
	if len(fields) != 2 {
		t.Fatalf("CuPy's handles: %q, want two", line)
	}
	var h cuda.IPCHandle
	var peh cuda.IPCEventHandle
	if err := h.UnmarshalText([]byte(fields[0])); err != nil {
		t.Fatal(err)
	}
	if err := peh.UnmarshalText([]byte(fields[1])); err != nil {
		t.Fatal(err)
	}
	o, err := cuda.OpenIPC[float32](ctx, h, n)
	if err != nil {
		t.Fatalf("opening CuPy's memory: %v", err)
	}
	// CuPy's fill comes after a kernel of 200 ms: only its event orders
	// this stream's copy after it.
	oev, err := cuda.OpenIPCEvent(ctx, peh)
	if err != nil {
		t.Fatalf("opening CuPy's event: %v", err)
	}
	if err := s.WaitEvent(oev); err != nil {
		t.Fatal(err)
	}
	if err := o.CopyToHostAsync(got, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if err := oev.Close(); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 3*float32(i) {
			t.Fatalf("CuPy's memory: element %d is %v, want %v", i, v, 3*i)
		}
	}
	if err := o.Free(); err != nil {
		t.Fatal(err)
	}
	stdin.Write([]byte("done\n"))
}
