package ucp

import "github.com/ucgo/ucgo/uct"

// retryLater reports whether a transport refused a post for a while
// rather than for good: back-pressure (uct.ErrNoResource), or a route that
// was lost and may come back (uct.ErrRouteLost, a link that went down). The
// request then stays queued, in order, and is posted again by later
// Progress calls, as after back-pressure; the endpoint stays healthy.
// Operations already in flight are carried over a short outage by the
// transport's own retransmission.
func retryLater(err error) bool {
	return noResource(err) || err != nil && uct.StatusOf(err) == uct.ErrRouteLost
}
