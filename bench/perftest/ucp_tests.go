package main

import (
	"fmt"

	"github.com/ucgo/ucgo/internal/tsc"
	"github.com/ucgo/ucgo/ucp"
)

// The ucp tests. As the uct tests, each runs iters iterations on both
// sides; the initiator marks every iteration, the responder serves, and
// every test ends with nothing outstanding on either side. tag_lat and
// tag_bw stamp their iterations inline (meter.stamp), as the short-put
// loops do.

// tagLat: ping-pong of tagged messages. As in ucx_perftest's ucp
// ping-pong, the responder posts its receive before it waits for the
// message, and the initiator posts its receive after its send: the
// answer cannot come before it, so posting overlaps the message's
// flight instead of delaying the send (an answer that is faster still
// is matched as unexpected).
func tagLat(s *ucpSession, size, iters int) error { return tagPingPong(s, size, iters, s.ep.TagSend) }

// tagSyncLat: tagLat with synchronous sends, which complete only once the
// peer's receive matched them.
func tagSyncLat(s *ucpSession, size, iters int) error {
	return tagPingPong(s, size, iters, s.ep.TagSendSync)
}

func tagPingPong(s *ucpSession, size, iters int, send func([]byte, uint64, *ucp.Params) *ucp.Request) error {
	for i := 0; i < iters; i++ {
		if s.initiator {
			if err := s.wait(send(s.src[:size], tagData, nil)); err != nil {
				return fmt.Errorf("tag send: %w", err)
			}
			if err := s.wait(s.w.TagRecv(s.dst[:size], tagData, s.mask, nil)); err != nil {
				return fmt.Errorf("tag receive: %w", err)
			}
			if now := tsc.Now(); s.stamp(now) {
				s.lap(i, now)
			}
		} else {
			if err := s.wait(s.w.TagRecv(s.dst[:size], tagData, s.mask, nil)); err != nil {
				return fmt.Errorf("tag receive: %w", err)
			}
			if err := s.wait(send(s.src[:size], tagData, nil)); err != nil {
				return fmt.Errorf("tag send: %w", err)
			}
		}
	}
	return nil
}

// tagBW: the initiator streams tagged messages with up to -O outstanding;
// the responder keeps -O receives posted and answers the last with a
// done message.
func tagBW(s *ucpSession, size, iters int) error {
	if s.initiator {
		done := s.w.TagRecv(s.dst[:0], tagDone, ^uint64(0), nil)
		for i := 0; i < iters; i++ {
			if err := s.push(s.ep.TagSend(s.src[:size], tagData, nil)); err != nil {
				done.Cancel()
				done.Release()
				return fmt.Errorf("tag send: %w", err)
			}
			if now := tsc.Now(); s.stamp(now) {
				s.lap(i, now)
			}
		}
		if err := s.drain(); err != nil {
			done.Cancel()
			done.Release()
			return fmt.Errorf("tag send: %w", err)
		}
		if err := s.wait(done); err != nil {
			return fmt.Errorf("done message: %w", err)
		}
		return nil
	}
	for i := 0; i < iters; i++ {
		if err := s.push(s.w.TagRecv(s.dst[:size], tagData, s.mask, nil)); err != nil {
			return fmt.Errorf("tag receive: %w", err)
		}
	}
	if err := s.drain(); err != nil {
		return fmt.Errorf("tag receive: %w", err)
	}
	if err := s.wait(s.ep.TagSend(nil, tagDone, nil)); err != nil {
		return fmt.Errorf("done message: %w", err)
	}
	return nil
}

// waitByte progresses until byte i of the buffer is v.
func (s *ucpSession) waitByte(i int, v byte) error {
	s.idle = 0
	for loadByte(s.buf, i) != v {
		if err := s.poll(); err != nil {
			return err
		}
	}
	return nil
}

// ucpPutLat: ping-pong of puts; each side polls the last byte of its own
// buffer for the iteration's value, as ucx_perftest does.
func ucpPutLat(s *ucpSession, size, iters int) error {
	last := size - 1
	for i := 0; i < iters; i++ {
		s.seq++
		v := byte(s.seq%255 + 1)
		s.src[last] = v
		if s.initiator {
			r := s.ep.Put(s.src[:size], s.raddr, s.rkey, nil)
			if err := s.waitByte(last, v); err != nil {
				r.Release()
				return err
			}
			if err := s.wait(r); err != nil {
				return fmt.Errorf("put: %w", err)
			}
			s.mark(i)
		} else {
			if err := s.waitByte(last, v); err != nil {
				return err
			}
			if err := s.wait(s.ep.Put(s.src[:size], s.raddr, s.rkey, nil)); err != nil {
				return fmt.Errorf("put: %w", err)
			}
		}
	}
	return s.flush()
}

// endOneSided: the initiator flushes and tells the passive responder that
// the phase is over.
func (s *ucpSession) endOneSided() error {
	if s.initiator {
		if err := s.flush(); err != nil {
			return err
		}
		if err := s.sendDone(); err != nil {
			return fmt.Errorf("done message: %w", err)
		}
		return nil
	}
	return s.waitCount(&s.doneWant, &s.done, 1)
}

// ucpPutBW: the initiator streams puts with up to -O outstanding.
func ucpPutBW(s *ucpSession, size, iters int) error {
	if s.initiator {
		for i := 0; i < iters; i++ {
			if err := s.push(s.ep.Put(s.src[:size], s.raddr, s.rkey, nil)); err != nil {
				return fmt.Errorf("put: %w", err)
			}
			s.mark(i)
		}
	}
	return s.endOneSided()
}

// ucpGet: the initiator streams gets with up to -O outstanding.
func ucpGet(s *ucpSession, size, iters int) error {
	if s.initiator {
		for i := 0; i < iters; i++ {
			if err := s.push(s.ep.Get(s.dst[:size], s.raddr, s.rkey, nil)); err != nil {
				return fmt.Errorf("get: %w", err)
			}
			s.mark(i)
		}
	}
	return s.endOneSided()
}

// ucpAMLat: ping-pong of active messages.
func ucpAMLat(s *ucpSession, size, iters int) error {
	for i := 0; i < iters; i++ {
		if s.initiator {
			if err := s.wait(s.ep.AMSend(ucpAMData, nil, s.src[:size], nil)); err != nil {
				return fmt.Errorf("am send: %w", err)
			}
			if err := s.waitCount(&s.recvWant, &s.recv, 1); err != nil {
				return err
			}
			s.mark(i)
		} else {
			if err := s.waitCount(&s.recvWant, &s.recv, 1); err != nil {
				return err
			}
			if err := s.wait(s.ep.AMSend(ucpAMData, nil, s.src[:size], nil)); err != nil {
				return fmt.Errorf("am send: %w", err)
			}
		}
	}
	return nil
}

// ucpAMBW: the initiator streams active messages with up to -O
// outstanding; the responder answers the last with a done message.
func ucpAMBW(s *ucpSession, size, iters int) error {
	if !s.initiator {
		if err := s.waitCount(&s.recvWant, &s.recv, iters); err != nil {
			return err
		}
		if err := s.sendDone(); err != nil {
			return fmt.Errorf("done message: %w", err)
		}
		return nil
	}
	for i := 0; i < iters; i++ {
		if err := s.push(s.ep.AMSend(ucpAMData, nil, s.src[:size], nil)); err != nil {
			return fmt.Errorf("am send: %w", err)
		}
		s.mark(i)
	}
	if err := s.drain(); err != nil {
		return fmt.Errorf("am send: %w", err)
	}
	return s.waitCount(&s.doneWant, &s.done, 1)
}

// ucpAdd: the initiator streams atomic adds to the peer's counter with up
// to -O outstanding.
func ucpAdd(s *ucpSession, _, iters int) error {
	if s.initiator {
		for i := 0; i < iters; i++ {
			if err := s.push(s.ep.AtomicPost(ucp.AtomicAdd, 1, s.raddr+uint64(s.dataLen), s.rkey, nil)); err != nil {
				return fmt.Errorf("atomic add: %w", err)
			}
			s.mark(i)
		}
	}
	return s.endOneSided()
}

// ucpFetch runs one fetching atomic on the peer's second counter to
// completion.
func (s *ucpSession) ucpFetch(op ucp.AtomicOp, value, compare uint64) error {
	err := s.wait(s.ep.AtomicFetch(op, value, compare, &s.result, s.raddr+uint64(s.dataLen+8), s.rkey, nil))
	if err != nil {
		return fmt.Errorf("atomic fetch: %w", err)
	}
	return nil
}

// ucpFAdd: one fetch-and-add at a time; latency is the full round trip.
func ucpFAdd(s *ucpSession, _, iters int) error {
	if s.initiator {
		for i := 0; i < iters; i++ {
			if err := s.ucpFetch(ucp.AtomicAdd, 1, 0); err != nil {
				return err
			}
			s.mark(i)
		}
	}
	return s.endOneSided()
}

// ucpCSwap: one compare-and-swap at a time, each expected to succeed.
func ucpCSwap(s *ucpSession, _, iters int) error {
	if s.initiator {
		for i := 0; i < iters; i++ {
			if err := s.ucpFetch(ucp.AtomicCSwap, s.cswapOld+1, s.cswapOld); err != nil {
				return err
			}
			if s.result == s.cswapOld {
				s.cswapOld++
			} else {
				s.cswapOld = s.result
			}
			s.mark(i)
		}
	}
	return s.endOneSided()
}
