package ucp

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/uct"
)

// TestConnectUnreachable: Connect to the address of a worker that has
// closed (its process lives on) fails with an error wrapping
// uct.ErrUnreachable: for rc its connection manager's port refuses the
// connection, for shm its segment is gone.
func TestConnectUnreachable(t *testing.T) {
	for _, tr := range []struct {
		name string
		mk   func() uct.Component
	}{
		{"rc", func() uct.Component {
			return rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1})
		}},
		{"shm", func() uct.Component { return shm.New() }},
	} {
		t.Run(tr.name, func(t *testing.T) {
			var ws [2]*Worker
			for i := range ws {
				ctx, err := newContext(Config{Transports: []uct.Component{tr.mk()}}, func(string) string { return "" })
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ctx.Close() })
				if ws[i], err = ctx.NewWorker(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ws[i].Close() })
			}
			addr := ws[1].Address()
			if err := ws[1].Close(); err != nil {
				t.Fatal(err)
			}
			ep, err := ws[0].Connect(addr, EPParams{})
			if !errors.Is(err, uct.ErrUnreachable) {
				t.Fatalf("Connect to a closed worker: endpoint %v, error %v; want one wrapping %v", ep, err, uct.ErrUnreachable)
			}
			t.Logf("%v", err)
		})
	}
}
