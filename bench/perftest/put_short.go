package main

import (
	"fmt"

	"github.com/ucgo/ucgo/internal/tsc"
)

// The loops of put_lat and put_bw with puts that fit PutShort. They are
// ucx_perftest's uct loops with the short layout: the endpoint, buffer,
// address and key are read once, PutShort is called directly, and the
// iteration's timestamp is the meter's stamp, inlined as ucx_perftest
// inlines ucx_perf_update (mark's out-of-line part runs once every
// markBatch iterations). Only a put that did not complete at once goes
// through put, which retries back-pressure. Like ucx_perftest's send_b,
// which progresses the worker after every 16th put that completed at
// once (N_SEND_B_PER_PROGRESS), they progress the iface once every
// sendsPerProgress puts: an shm put leaves nothing to progress, but the
// call is part of what ucx_perftest's loop costs.

// putShortLat is putLat with short puts: a ping-pong in which each side
// polls the last byte of its own buffer for the iteration's value.
func putShortLat(s *session, size, iters int) error {
	ep, src, raddr, rkey, m := s.ep, s.src[:size], s.raddr, s.rkey, &s.meter
	last := size - 1
	for i := 0; i < iters; i++ {
		s.seq++
		v := byte(s.seq%255 + 1)
		src[last] = v
		if s.initiator {
			if err := ep.PutShort(src, raddr, rkey); err != nil {
				if err := s.putAgain(size, err); err != nil {
					return err
				}
			} else if i%sendsPerProgress == 0 {
				if err := s.poll(); err != nil {
					return err
				}
			}
			if now := tsc.Now(); m.stamp(now) {
				m.lap(i, now)
			}
			if err := s.waitByte(last, v); err != nil {
				return err
			}
		} else {
			if err := s.waitByte(last, v); err != nil {
				return err
			}
			if err := ep.PutShort(src, raddr, rkey); err != nil {
				if err := s.putAgain(size, err); err != nil {
					return err
				}
			} else if i%sendsPerProgress == 0 {
				if err := s.poll(); err != nil {
					return err
				}
			}
		}
	}
	return s.drain()
}

// putShortStream posts iters short puts of size bytes, each followed by
// its timestamp, as ucx_perftest's put_bw loop posts uct_ep_put_short and
// runs ucx_perf_update.
func (s *session) putShortStream(size, iters int) error {
	ep, src, raddr, rkey, m := s.ep, s.src[:size], s.raddr, s.rkey, &s.meter
	for i := 0; i < iters; i++ {
		if err := ep.PutShort(src, raddr, rkey); err != nil {
			if err := s.putAgain(size, err); err != nil {
				return err
			}
		} else if i%sendsPerProgress == 0 {
			if err := s.poll(); err != nil {
				return err
			}
		}
		if now := tsc.Now(); m.stamp(now) {
			m.lap(i, now)
		}
	}
	return nil
}

// putAgain finishes a short put that PutShort refused with err: a put
// refused for back-pressure is retried through put, any other error
// ends the test.
func (s *session) putAgain(size int, err error) error {
	if again, err := s.retry(err); !again {
		return fmt.Errorf("put: %w", err)
	}
	return s.put(size)
}
