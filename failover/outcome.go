package failover

import "errors"

// ErrOutcomeUnknown completes an atomic operation whose answer had not
// come when its endpoint failed (no lane left, a dead peer, the peer's
// endpoint replaced by a new one): the target may or may not have
// applied it, and no lane is left to ask. The operation is not retried,
// since applying it twice would be wrong; the caller must find out by
// other means. While the endpoint lives no atomic ends so: its request
// and its answer are both sequenced messages, delivered once and
// replayed after a failover from the logs of the side that sent them,
// so the answer of an atomic the target applied always arrives.
var ErrOutcomeUnknown = errors.New("failover: atomic outcome unknown")
