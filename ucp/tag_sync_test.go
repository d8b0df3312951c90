package ucp

import (
	"bytes"
	"encoding/binary"
	"testing"
)

const (
	tagSyncMsg   = 10 // the synchronous message
	tagSyncGo    = 11 // parent → child: 8 bytes, the size to send
	tagSyncQuery = 12 // parent → child: has your synchronous send completed?
	tagSyncReply = 13 // child → parent: 0 posted, 1 pending, 2 done, 3 failed
)

func init() {
	// ssend: for each size the parent asks for, post a synchronous send,
	// say so, then answer every query with the send's state until it is
	// done, until tagQuit.
	childRoles["ssend"] = func(nd *node) error {
		ep := nd.eps[0]
		reply := func(b byte) error { return nd.wait(ep.TagSend([]byte{b}, mkTag(nd.rank, tagSyncReply), nil)) }
		var n [8]byte
		for {
			r := nd.w.TagRecv(n[:], 0, 0, nil)
			if err := nd.wait(r); err != nil {
				return err
			}
			if uint32(r.Info().Tag) == tagQuit {
				return nil
			}
			s := ep.TagSendSync(pattern(int(binary.LittleEndian.Uint64(n[:])), 7), mkTag(nd.rank, tagSyncMsg), nil)
			if err := reply(0); err != nil {
				return err
			}
			for {
				if err := nd.wait(nd.w.TagRecv(nil, mkTag(0, tagSyncQuery), exact, nil)); err != nil {
					return err
				}
				state := byte(1)
				if s.Done() {
					state = 2
					if s.Err() != nil {
						state = 3
					}
				}
				if err := reply(state); err != nil {
					return err
				}
				if state != 1 {
					break
				}
			}
		}
	}
}

// A synchronous send stays pending while its message waits unexpected at
// the receiver, however long the sender progresses, and completes once a
// receive matches it; eager sizes and rendezvous sizes alike, both
// rendezvous schemes.
func TestTagSendSync(t *testing.T) {
	for _, scheme := range []string{"get", "put"} {
		t.Run(scheme, func(t *testing.T) {
			cfg := Config{}
			if scheme == "put" {
				cfg.RndvScheme = RndvPut
			}
			nd := world(t, 2, "ssend", cfg, EnvRndvScheme+"="+scheme)
			ep := nd.eps[1]
			var state [1]byte
			ask := func(tag uint32) byte {
				t.Helper()
				r := nd.w.TagRecv(state[:], mkTag(1, tagSyncReply), exact, nil)
				nd.must(nd.wait(ep.TagSend(nil, mkTag(0, tag), nil)))
				nd.must(nd.wait(r))
				return state[0]
			}
			for _, n := range []int{0, 8, 1000, 70000} {
				var b [8]byte
				binary.LittleEndian.PutUint64(b[:], uint64(n))
				r := nd.w.TagRecv(state[:], mkTag(1, tagSyncReply), exact, nil)
				nd.must(nd.wait(ep.TagSend(b[:], mkTag(0, tagSyncGo), nil)))
				nd.must(nd.wait(r))
				// The reply was sent after the synchronous message, on the
				// same lane: its announcement is here, unexpected.
				if _, ok := nd.w.TagProbe(mkTag(1, tagSyncMsg), exact); !ok {
					t.Fatalf("size %d: no unexpected synchronous message", n)
				}
				if st := ask(tagSyncQuery); st != 1 {
					t.Fatalf("size %d: synchronous send in state %d before any receive matched it, want 1 (pending)", n, st)
				}
				in := make([]byte, n+1)
				rr := nd.w.TagRecv(in, mkTag(1, tagSyncMsg), exact, nil)
				nd.must(nd.wait(rr))
				if got := rr.Info().Length; got != n || !bytes.Equal(in[:n], pattern(n, 7)) {
					t.Fatalf("size %d: received %d bytes, content equal %v", n, got, bytes.Equal(in[:n], pattern(n, 7)))
				}
				for st := ask(tagSyncQuery); st != 2; st = ask(tagSyncQuery) {
					if st != 1 {
						t.Fatalf("size %d: synchronous send failed after the match", n)
					}
				}
			}
			nd.quit(1)
			nd.exitOK(1)
		})
	}
}
