//go:build linux

package verbs

// A poll that finds one datagram waiting is the common case of a
// ping-pong, and recvmmsg serves it badly: after the datagram it tries
// the socket again, and every call copies a vector of message headers
// in. So the receive stage takes one datagram with recvmsg until the
// socket has had data on rxBatchStreak polls in a row, the sign of a
// burst, and then batches with recvmmsg until a batch finds at most one.

// rxBatchStreak is how many consecutive polls must find data before the
// next one uses recvmmsg.
const rxBatchStreak = 3

// batched reports whether the next receive takes a batch.
func (r *rxBatch) batched() bool { return r.streak >= rxBatchStreak }

// account updates the streak after a receive of n datagrams that used a
// batch (batched) or not.
func (r *rxBatch) account(n int, batched bool) {
	switch {
	case n == 0:
		r.streak = 0
	case batched && n == 1:
		// The burst has drained: back to single receives, but one more
		// poll with data takes a batch again.
		r.streak = rxBatchStreak - 1
	case r.streak < rxBatchStreak:
		r.streak++
	}
}
