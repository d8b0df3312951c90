package verbs

import (
	"sync"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/uct"
)

// TestLinkStatusBeforePortDown: when the device's netdev goes down, the
// device's status says so before its port refuses posts, so that an
// owner whose post is refused for a port that is down finds the link
// down when it asks the device why; when the link comes back, the status
// says so only once the port is active again. The watcher, called as the
// status changes, sees the port still active going down and already
// active coming up.
func TestLinkStatusBeforePortDown(t *testing.T) {
	pair, err := netns.NewPair(t)
	if err != nil {
		t.Fatal(err)
	}
	d := openIn(t, pair.A)

	var mu sync.Mutex
	seen := map[bool][]PortState{} // usable → port states seen as the status changed
	w, err := d.Watchers.Register(func(ev uct.DeviceStatusEvent) {
		mu.Lock()
		seen[ev.Status.Usable()] = append(seen[ev.Status.Usable()], d.QueryPort().State)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	wait := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	if err := pair.A.SetLink(false); err != nil {
		t.Fatal(err)
	}
	wait("the port to go down", func() bool { return d.QueryPort().State == PortDown })
	if d.Watchers.Status().Usable() {
		t.Fatal("the port is down and the device's status still usable")
	}
	if err := pair.A.SetLink(true); err != nil {
		t.Fatal(err)
	}
	wait("the device's status to be usable", func() bool { return d.Watchers.Status().Usable() })
	if st := d.QueryPort().State; st != PortActive {
		t.Fatalf("the device's status is usable and its port %v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen[false]) != 1 || seen[false][0] != PortActive {
		t.Fatalf("port states seen as the link went down: %v, want one, active", seen[false])
	}
	if len(seen[true]) != 1 || seen[true][0] != PortActive {
		t.Fatalf("port states seen as the link came up: %v, want one, active", seen[true])
	}
}
