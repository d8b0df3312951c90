package main

import (
	"fmt"

	"github.com/ucgo/ucgo/uct"
)

// The uct tests. Each runs iters iterations on both sides; the initiator
// marks every iteration (s.mark), the responder serves. Every test ends
// with the endpoint drained and flushed on both sides. The ping-pongs mark
// an iteration right after its send, as ucx_perftest's uct ping-pong
// calls ucx_perf_update after send_b: the time between two marks is one
// round trip all the same, and reading the clock overlaps the message's
// flight instead of delaying the next send.

func (s *session) waitRecv(want *int, got *int, n int) error {
	*want += n
	s.beginWait()
	for *got < *want {
		if err := s.poll(); err != nil {
			return err
		}
	}
	return nil
}

// amLat: ping-pong of AMs of size bytes.
func amLat(s *session, size, iters int) error {
	for i := 0; i < iters; i++ {
		if s.initiator {
			if err := s.sendAM(amPing, size); err != nil {
				return err
			}
			s.mark(i)
			if err := s.waitRecv(&s.recvWant, &s.recv, 1); err != nil {
				return err
			}
		} else {
			if err := s.waitRecv(&s.recvWant, &s.recv, 1); err != nil {
				return err
			}
			if err := s.sendAM(amPing, size); err != nil {
				return err
			}
		}
	}
	return s.drain()
}

// endOneSided: the initiator tells the passive responder that the phase
// is over.
func (s *session) endOneSided() error {
	if s.initiator {
		if err := s.drain(); err != nil {
			return err
		}
		if err := s.sendAM(amDone, 8); err != nil {
			return err
		}
		return s.drain()
	}
	return s.waitRecv(&s.doneWant, &s.done, 1)
}

// put writes src[:size] to the peer's buffer: short if it fits, else zcopy.
func (s *session) put(size int) error {
	for {
		var err error
		if size <= s.attr.PutMaxShort {
			err = s.ep.PutShort(s.src[:size], s.raddr, s.rkey)
		} else {
			var i int
			if i, err = s.slot(); err != nil {
				return err
			}
			s.iovs[i][0] = s.src[:size]
			err = s.posted(i, s.ep.PutZcopy(s.iovs[i], s.raddr, s.rkey, &s.comps[i]))
		}
		again, err := s.retry(err)
		if !again {
			if err != nil {
				return fmt.Errorf("put: %w", err)
			}
			return nil
		}
	}
}

// waitByte polls the local buffer until byte i is v.
func (s *session) waitByte(i int, v byte) error {
	s.beginWait()
	for loadByte(s.buf, i) != v {
		if err := s.poll(); err != nil {
			return err
		}
	}
	return nil
}

// putLat: ping-pong of puts; each side polls the last byte of its own
// buffer for the iteration's value, as ucx_perftest does. (The rest of the
// message is not checked: a put's bytes may land in any order.)
func putLat(s *session, size, iters int) error {
	if size <= s.attr.PutMaxShort {
		return putShortLat(s, size, iters)
	}
	last := size - 1
	for i := 0; i < iters; i++ {
		s.seq++
		v := byte(s.seq%255 + 1)
		s.src[last] = v
		if s.initiator {
			if err := s.put(size); err != nil {
				return err
			}
			s.mark(i)
			if err := s.waitByte(last, v); err != nil {
				return err
			}
		} else {
			if err := s.waitByte(last, v); err != nil {
				return err
			}
			if err := s.put(size); err != nil {
				return err
			}
		}
	}
	return s.drain()
}

// putBW: the initiator streams puts with up to -O outstanding. Short
// puts, which complete in the call, take putShortStream.
func putBW(s *session, size, iters int) error {
	if s.initiator && size <= s.attr.PutMaxShort {
		if err := s.putShortStream(size, iters); err != nil {
			return err
		}
	} else if s.initiator {
		for i := 0; i < iters; i++ {
			if err := s.put(size); err != nil {
				return err
			}
			s.mark(i)
		}
	}
	return s.endOneSided()
}

// getBW: the initiator streams gets with up to -O outstanding.
func getBW(s *session, size, iters int) error {
	if s.initiator {
		for i := 0; i < iters; i++ {
			for {
				j, err := s.slot()
				if err != nil {
					return err
				}
				s.iovs[j][0] = s.dst[:size]
				again, err := s.retry(s.posted(j, s.ep.GetZcopy(s.iovs[j], s.raddr, s.rkey, &s.comps[j])))
				if err != nil {
					return fmt.Errorf("get: %w", err)
				}
				if !again {
					break
				}
			}
			s.mark(i)
		}
	}
	return s.endOneSided()
}

// addLat: ping-pong of atomic adds; each side polls its own counter.
func addLat(s *session, _, iters int) error {
	post := func() error {
		for {
			again, err := s.retry(s.ep.AtomicPost(uct.AtomicAdd, 8, 1, s.raddr+uint64(s.ctrOff), s.rkey))
			if !again {
				if err != nil {
					return fmt.Errorf("atomic add: %w", err)
				}
				return nil
			}
		}
	}
	wait := func() error {
		s.ctrWant++
		s.beginWait()
		for loadUint64(s.buf, s.ctrOff) < s.ctrWant {
			if err := s.poll(); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 0; i < iters; i++ {
		if s.initiator {
			if err := post(); err != nil {
				return err
			}
			s.mark(i)
			if err := wait(); err != nil {
				return err
			}
		} else {
			if err := wait(); err != nil {
				return err
			}
			if err := post(); err != nil {
				return err
			}
		}
	}
	return s.drain()
}

// fetch runs one fetching atomic to completion.
func (s *session) fetch(op uct.AtomicOp, value, compare uint64) error {
	for {
		j, err := s.slot()
		if err != nil {
			return err
		}
		err = s.ep.AtomicFetch(op, 8, value, compare, &s.result, s.raddr+uint64(s.ctrOff+8), s.rkey, &s.comps[j])
		again, err := s.retry(s.posted(j, err))
		if err != nil {
			return fmt.Errorf("atomic fetch: %w", err)
		}
		if !again {
			break
		}
	}
	s.beginWait()
	for s.outstanding > 0 {
		if err := s.poll(); err != nil {
			return err
		}
	}
	return nil
}

// fetchAdd: one fetch-and-add at a time; latency is the full round trip.
func fetchAdd(s *session, _, iters int) error {
	if s.initiator {
		for i := 0; i < iters; i++ {
			if err := s.fetch(uct.AtomicAdd, 1, 0); err != nil {
				return err
			}
			s.mark(i)
		}
	}
	return s.endOneSided()
}

// cswap: one compare-and-swap at a time, each expected to succeed.
func cswap(s *session, _, iters int) error {
	if s.initiator {
		for i := 0; i < iters; i++ {
			if err := s.fetch(uct.AtomicCSwap, s.cswapOld+1, s.cswapOld); err != nil {
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
