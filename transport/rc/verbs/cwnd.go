package verbs

// The requester's window: how many PSNs it has outstanding at most. It
// adapts the way TCP's congestion window does, because nothing else
// stands between a requester and a slow or congested path (a
// rate-limited link's queue, a peer's socket buffer): a loss is the
// only signal there is.
//
//   - A QP starts at initWindow PSNs, the most it allows, its threshold
//     at maxWindow.
//   - A local ACK timeout sets the threshold to half the window and the
//     window to minWindow; a sequence NAK, an implied NAK or a missing
//     READ response (the peer saw a gap) sets both to half the window.
//     A restart already under way does not shrink it again, and an RNR
//     NAK (the peer had no receive posted) does not shrink it at all.
//   - Below the threshold the window grows by every PSN acknowledged
//     (a READ response or an atomic ACK counts for its PSN), so it
//     doubles each round trip; above it, by ackEvery PSNs per window
//     acknowledged, back up to maxWindow.
//
// maxWindow is 512 PSNs (2 MiB at a 4096-byte MTU). A larger window
// overflows the queue of a link that carries a fixed rate (a tc token
// bucket that holds 50 ms, about 600 packets at 400 Mbit/s, stands in
// for one), and go-back-N then sends everything outstanding again.
const (
	initWindow = 512
	minWindow  = 32
	maxWindow  = 512
)

// cwnd is a requester's window state.
type cwnd struct {
	size   int32 // PSNs allowed outstanding
	thresh int32 // growth turns additive at this size
	acked  int32 // PSNs acknowledged since the last additive step
}

func (c *cwnd) reset() { *c = cwnd{size: initWindow, thresh: maxWindow} }

// grow accounts for k PSNs newly acknowledged.
func (c *cwnd) grow(k int32) {
	if k <= 0 || c.size >= maxWindow {
		return
	}
	if c.size < c.thresh {
		c.size = min(c.size+k, c.thresh)
		return
	}
	c.acked += k
	if c.acked >= c.size {
		c.acked -= c.size
		c.size = min(c.size+ackEvery, maxWindow)
	}
}

// timedOut shrinks the window after a local ACK timeout.
func (c *cwnd) timedOut() {
	c.thresh = max(c.size/2, minWindow)
	c.size = minWindow
	c.acked = 0
}

// gap shrinks the window after the peer reported a gap.
func (c *cwnd) gap() {
	c.thresh = max(c.size/2, minWindow)
	c.size = c.thresh
	c.acked = 0
}
