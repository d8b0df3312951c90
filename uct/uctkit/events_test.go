package uctkit

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

type recordHandler struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r.Clone())
	h.mu.Unlock()
	return nil
}

func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }

func (h *recordHandler) WithGroup(string) slog.Handler { return h }

func TestErrorHandlerSlot(t *testing.T) {
	rec := &recordHandler{}
	old := slog.Default()
	slog.SetDefault(slog.New(rec))
	defer slog.SetDefault(old)

	var s ErrorHandlerSlot
	s.Call(nil, ErrPortErr)
	type ctxKey struct{ id int }
	arg := &ctxKey{7}
	var got []any
	var gotErr error
	s.Set(func(a any, ep uct.Endpoint, err error) { got = append(got, a); gotErr = err }, arg)
	s.Call(nil, uct.ErrPeerFailed)
	if len(got) != 1 || got[0] != arg || !errors.Is(gotErr, uct.ErrPeerFailed) {
		t.Errorf("custom handler got %v, %v", got, gotErr)
	}
	s.Set(nil, "ignored")
	s.Call(nil, uct.ErrRouteLost)
	if len(got) != 1 {
		t.Error("handler still called after Set(nil)")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) != 2 {
		t.Fatalf("default handler logged %d records, want 2", len(rec.recs))
	}
	for i, want := range []error{ErrPortErr, uct.ErrRouteLost} {
		r := rec.recs[i]
		if r.Level != slog.LevelError {
			t.Errorf("record %d level %v", i, r.Level)
		}
		var errAttr any
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" {
				errAttr = a.Value.Any()
			}
			return true
		})
		if e, ok := errAttr.(error); !ok || !errors.Is(e, want) {
			t.Errorf("record %d err attr %v, want %v", i, errAttr, want)
		}
	}
}

// ErrPortErr is a test error standing for an iface-wide failure.
var ErrPortErr = errors.New("port error")

func TestDeviceWatchers(t *testing.T) {
	var d DeviceWatchers
	d.Init("eth0", uct.DeviceUp)
	if d.Status() != uct.DeviceUp {
		t.Fatalf("Status = %v", d.Status())
	}
	if _, err := d.Register(nil); !errors.Is(err, uct.ErrInvalidParam) {
		t.Errorf("Register(nil) = %v", err)
	}
	var mu sync.Mutex
	var got1, got2 []uct.DeviceStatusEvent
	w1, err := d.Register(func(e uct.DeviceStatusEvent) { mu.Lock(); got1 = append(got1, e); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	w2, _ := d.Register(func(e uct.DeviceStatusEvent) { mu.Lock(); got2 = append(got2, e); mu.Unlock() })
	d.Set(uct.DeviceUp) // no change: nothing delivered
	d.Set(uct.DeviceDown)
	d.Set(uct.DeviceRDMADisabled)
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	w2.Close()
	d.Set(uct.DeviceUp)
	w1.Close()
	d.Set(uct.DeviceDown)
	want1 := []uct.DeviceStatusEvent{{Device: "eth0", Status: uct.DeviceDown}, {Device: "eth0", Status: uct.DeviceRDMADisabled}, {Device: "eth0", Status: uct.DeviceUp}}
	want2 := want1[:2]
	if !equalEvents(got1, want1) || !equalEvents(got2, want2) {
		t.Errorf("watcher 1 got %v (want %v), watcher 2 got %v (want %v)", got1, want1, got2, want2)
	}
	var nilw *uct.Watch
	if nilw.Close() != nil {
		t.Error("nil Watch.Close")
	}
	for s, str := range map[uct.DeviceStatus]string{uct.DeviceUp: "up", uct.DeviceDown: "down", uct.DeviceRDMADisabled: "rdma-disabled", uct.DeviceDown | uct.DeviceRDMADisabled: "down|rdma-disabled", 9: "up|device-status(0x8)", 0: "device-status(0x0)"} {
		if s.String() != str {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), str)
		}
	}
}

func equalEvents(a, b []uct.DeviceStatusEvent) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDeviceWatchersConcurrentSetInOrder(t *testing.T) {
	for round := 0; round < 50; round++ {
		var d DeviceWatchers
		d.Init("eth0", uct.DeviceUp)
		var mu sync.Mutex
		var last uct.DeviceStatus
		w, _ := d.Register(func(e uct.DeviceStatusEvent) { mu.Lock(); last = e.Status; mu.Unlock() })
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					d.Set(uct.DeviceStatus(1 + (g+i)%3))
				}
			}()
		}
		wg.Wait()
		w.Close()
		mu.Lock()
		if last != d.Status() && last != 0 {
			t.Fatalf("round %d: watcher's last event %v, device status %v", round, last, d.Status())
		}
		mu.Unlock()
	}
}
