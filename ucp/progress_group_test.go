package ucp

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/uct"
)

// TestWorkerProgressGroup: a worker opens its ifaces in its progress
// group, so its Progress marks the group that the rc devices' watchdogs
// read (uct.ProgressGroup).
func TestWorkerProgressGroup(t *testing.T) {
	ts := []uct.Component{
		rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1}),
		rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1}),
	}
	ctx, err := newContext(Config{Transports: ts}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	w, err := ctx.NewWorker()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(w.ifaces) != 2 {
		t.Fatalf("%d ifaces, want 2", len(w.ifaces))
	}
	// Neither iface carries traffic: Progress polls them every
	// idlePollEvery calls.
	for i := 0; i <= idlePollEvery && !w.pgroup.Active(uct.GroupClock(time.Now()), int64(time.Hour)); i++ {
		w.Progress()
	}
	if !w.pgroup.Active(uct.GroupClock(time.Now()), int64(time.Hour)) {
		t.Fatal("the worker's Progress did not mark its progress group")
	}
}
