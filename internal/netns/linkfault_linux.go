package netns

import (
	"fmt"
	"os/exec"
	"strconv"
	"time"
)

// Flap takes the namespace's veth end down for down, then up for up,
// cycles times, and returns with the link up. The loop is bounded by its
// arguments; a failure to set the link ends it.
func (n *NS) Flap(down, up time.Duration, cycles int) error {
	for i := 0; i < cycles; i++ {
		if err := n.SetLink(false); err != nil {
			return err
		}
		time.Sleep(down)
		if err := n.SetLink(true); err != nil {
			return err
		}
		time.Sleep(up)
	}
	return nil
}

// SetRate limits what the namespace's veth end sends to mbit megabits per
// second with a token bucket filter (tc qdisc tbf; iproute2's tc must be
// installed), standing in for a NIC of that speed; 0 removes the limit.
// Packets beyond the bucket wait up to 50 ms, then are dropped.
func (n *NS) SetRate(mbit int) error {
	args := []string{"qdisc", "replace", "dev", n.link, "root", "tbf",
		"rate", strconv.Itoa(mbit) + "mbit", "burst", "256kb", "latency", "50ms"}
	if mbit == 0 {
		args = []string{"qdisc", "del", "dev", n.link, "root"}
	}
	return n.Do(func() error {
		out, err := exec.Command("tc", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("netns %s: tc %v: %w: %s", n.name, args, err, out)
		}
		return nil
	})
}
