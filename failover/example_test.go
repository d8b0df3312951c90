package failover_test

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// A sender numbers its messages, the receiver delivers each once and in
// order; when the lane fails, the sender asks what was delivered and
// replays only the rest on the other lane.
func Example() {
	pol := failover.DefaultPolicy()
	send := failover.NewSendLog[string](64)
	recv := failover.NewRecvWindow[string](16)
	deliver := func(seq uint64, m string) { fmt.Println("delivered", seq, m) }

	for _, m := range []string{"a", "b", "c", "d"} {
		send.Append(m)
	}
	// Lane 0 carried a and b, then its link went down; c and d were lost.
	recv.Accept(1, "a", deliver)
	recv.Accept(2, "b", deliver)
	err := uct.ErrRouteLost
	lanes := []failover.Lane{{Index: 0, Transport: "rc", Device: "veth0"}, {Index: 1, Transport: "rc", Device: "veth1"}}
	if !pol.ShouldFailOver(err) {
		return
	}
	to, _ := pol.Select(lanes, 0)
	n, _ := send.Replay(recv.Delivered(), nil, func(seq uint64, m string) {
		recv.Accept(seq, m, deliver) // sent on lanes[to]
	})
	fmt.Println(failover.Event{Kind: failover.FailedOver, Endpoint: "ep 1", From: lanes[0], To: lanes[to],
		Cause: err, Detect: 3 * time.Millisecond, Switch: 2 * time.Millisecond, Replayed: n})
	// Output:
	// delivered 1 a
	// delivered 2 b
	// delivered 3 c
	// delivered 4 d
	// ep 1: lane 0 (rc on veth0) failed (route to peer lost), seen after 3ms; moved to lane 1 (rc on veth1) in 2ms, 2 replayed
}
