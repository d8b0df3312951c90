package main

import (
	"encoding/binary"

	"github.com/ucgo/ucgo/uct"
)

// am_bw's application flow control, as ucx_perftest runs it (its
// run_stream_req_uni with flow control): active messages are handled in
// software, so the sender keeps at most fcWindow of them unacknowledged,
// and the receiver acknowledges every half window with an AM of the
// test's size whose header is the number of messages it received. The
// sender ends when the last message is acknowledged. Neither side then
// fills the receiver's FIFO, whatever the order in which the two start.

// fcWindow is ucx_perftest's flow-control window
// (UCT_PERF_TEST_MAX_FC_WINDOW).
const fcWindow = 127

// sendsPerProgress: the sender progresses once every this many sends that
// completed at once, as ucx_perftest's send_b does (N_SEND_B_PER_PROGRESS).
const sendsPerProgress = 16

// amFC is one side's flow-control state of a phase.
type amFC struct {
	sent    int // data messages sent (sender)
	acked   int // highest acknowledgement received (sender)
	ackSent int // highest acknowledgement sent (receiver)
	acks    int // acknowledgements received (sender; tests read it)
	// maxUnacked is the largest sent-acked the sender reached (tests).
	maxUnacked int
	// noResource counts sends that found the peer's FIFO full.
	noResource int
}

// onAck is the sender's handler of the receiver's acknowledgements.
func (s *session) onAck(_ any, data []byte, _ uct.AMFlags) {
	if len(data) < 8 {
		return
	}
	if n := int(binary.LittleEndian.Uint64(data)); n > s.fc.acked {
		s.fc.acked = n
	}
	s.fc.acks++
}

// sendAck acknowledges the first n messages of the phase.
func (s *session) sendAck(size, n int) error {
	s.fc.ackSent = n
	return s.sendAMHdr(amAck, size, uint64(n))
}

// amBW: the initiator streams AMs, at most fcWindow unacknowledged; the
// responder acknowledges every half window and the last message.
func amBW(s *session, size, iters int) error {
	s.fc = amFC{}
	if !s.initiator {
		// Messages are counted across phases: a message of this phase
		// may arrive while the previous one drains.
		base := s.recvWant
		s.recvWant += iters
		s.beginWait()
		for s.recv < s.recvWant {
			if err := s.poll(); err != nil {
				return err
			}
			if got := s.recv - base; got > s.fc.ackSent+fcWindow/2 {
				if err := s.sendAck(size, got); err != nil {
					return err
				}
			}
		}
		if s.fc.ackSent < iters {
			if err := s.sendAck(size, iters); err != nil {
				return err
			}
		}
		return s.drain()
	}
	for i := 0; i < iters; i++ {
		if s.fc.sent > s.fc.acked+fcWindow-1 {
			s.beginWait()
			for s.fc.sent > s.fc.acked+fcWindow-1 {
				if err := s.poll(); err != nil {
					return err
				}
			}
		}
		if err := s.sendAMHdr(amData, size, uint64(s.seq)); err != nil {
			return err
		}
		s.fc.sent++
		s.fc.maxUnacked = max(s.fc.maxUnacked, s.fc.sent-s.fc.acked)
		if s.fc.sent%sendsPerProgress == 0 {
			s.it.Progress()
		}
		s.mark(i)
	}
	s.beginWait()
	for s.fc.acked < iters {
		if err := s.poll(); err != nil {
			return err
		}
	}
	return s.drain()
}
