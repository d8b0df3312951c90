package ucp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ucgo/ucgo/uct"
)

// FuzzSeqWire: the decoders of the sequenced channel, the sync and the
// atomics as active messages take any input without panicking, reject
// bad input with an error wrapping uct.ErrInvalidParam, and what they
// accept encodes back to the same bytes.
func FuzzSeqWire(f *testing.F) {
	h := make([]byte, seqHdr)
	putSeqHdr(h, 1, 2, 3, amEager)
	f.Add(uint8(0), append(h, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9))
	f.Add(uint8(0), h[:seqHdr-1])
	f.Add(uint8(1), encodeSeqAck(nil, 1, 2, seqAckWant))
	f.Add(uint8(1), encodeSeqAck(nil, 1, 2, 7))
	f.Add(uint8(2), (&syncMsg{dst: 1, delivered: 1 << 40, flags: syncReply, num: 3}).encode(nil))
	f.Add(uint8(2), (&syncMsg{dst: 1, delivered: 7, flags: syncLane, num: 1 << 31, status: uint8(uct.ErrRouteLost), local: "rc", remote: "rc#1"}).encode(nil))
	f.Add(uint8(2), (&syncMsg{dst: 1, delivered: 7}).encode(nil)) // number 0: refused
	f.Add(uint8(3), (&atomicReq{dst: 1, opid: 2, op: 3, fetch: true, value: 4, compare: 5, raddr: 6, rkey: []byte{7}}).encode(nil))
	f.Add(uint8(4), (&atomicRep{dst: 1, opid: 2, result: 3, status: 4}).encode(nil))
	f.Fuzz(func(t *testing.T, id uint8, b []byte) {
		check := func(err error) bool {
			if err != nil && !errors.Is(err, uct.ErrInvalidParam) {
				t.Fatalf("error %v does not wrap ErrInvalidParam", err)
			}
			return err == nil
		}
		switch id % 5 { // the seeds' ids name the decoder
		case 0:
			m, err := decodeSeq(b)
			if check(err) {
				e := make([]byte, seqHdr)
				putSeqHdr(e, m.dst, m.seq, m.ack, m.id)
				if !bytes.Equal(append(e, m.inner...), b) {
					t.Fatal("sequenced message round trip differs")
				}
			}
		case 1:
			d, a, fl, err := decodeSeqAck(b)
			if check(err) && !bytes.Equal(encodeSeqAck(nil, d, a, fl), b) {
				t.Fatal("ack round trip differs")
			}
		case 2:
			m, err := decodeSync(b)
			if check(err) && !bytes.Equal(m.encode(nil), b) {
				t.Fatal("sync round trip differs")
			}
		case 3:
			m, err := decodeAtomicReq(b)
			if check(err) && !bytes.Equal(m.encode(nil), b) {
				t.Fatal("atomic request round trip differs")
			}
		case 4:
			m, err := decodeAtomicRep(b)
			if check(err) && !bytes.Equal(m.encode(nil), b) {
				t.Fatal("atomic reply round trip differs")
			}
		}
	})
}
