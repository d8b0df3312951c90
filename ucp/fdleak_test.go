package ucp

import (
	"net/netip"
	"testing"

	"github.com/ucgo/ucgo/internal/fd"
	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/uct"
)

// TestWorkerCloseLeaksNoDescriptor: contexts and workers on shm and on rc
// (127.0.0.1), connected and exchanging a tagged message, all closed,
// leave no descriptor open.
func TestWorkerCloseLeaksNoDescriptor(t *testing.T) {
	configs := map[string]func() Config{
		"shm": func() Config { return Config{} },
		"rc": func() Config {
			return Config{Transports: []uct.Component{rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1})}}
		},
	}
	for name, cfg := range configs {
		t.Run(name, func(t *testing.T) {
			round := func() {
				uctx, err := NewContext(cfg())
				if err != nil {
					t.Fatal(err)
				}
				a, err := uctx.NewWorker()
				if err != nil {
					t.Fatal(err)
				}
				b, err := uctx.NewWorker()
				if err != nil {
					t.Fatal(err)
				}
				ep, err := a.Connect(b.Address(), EPParams{})
				if err != nil {
					t.Fatal(err)
				}
				recv := b.TagRecv(make([]byte, 64), 42, ^uint64(0), nil)
				send := ep.TagSend([]byte("hello"), 42, nil)
				c, cancel := testCtx()
				for !recv.Done() || !send.Done() {
					a.Progress()
					b.Progress()
					if c.Err() != nil {
						t.Fatal("tag send not done")
					}
				}
				cancel()
				for _, x := range []interface{ Close() error }{a, b, uctx} {
					if err := x.Close(); err != nil {
						t.Errorf("close %T: %v", x, err)
					}
				}
			}
			fd.CheckRounds(t, "closed workers", round)
		})
	}
}
