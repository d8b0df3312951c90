package ucp

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

const (
	amBig      = 12
	amBigReply = 13
	amKeepEnv  = "UCGO_UCP_AM_KEEP" // "1": eager data is kept, else received with RecvData
)

// amEcho is a handler that takes the data of every message (eager:
// Keep or RecvData; rendezvous: RecvData into its own buffer) and passes
// header and data to done, from the handler or from RecvData's callback.
func amEcho(keep bool, done func(m *AMMessage, hdr, data []byte, err error)) AMHandler {
	return func(m *AMMessage) {
		hdr := append([]byte(nil), m.Header...)
		if !m.Rndv {
			if keep {
				done(m, hdr, m.Keep(), nil)
				return
			}
			buf := make([]byte, m.Length)
			r := m.RecvData(buf, nil)
			if !r.Done() {
				done(m, hdr, nil, fmt.Errorf("eager RecvData did not complete at once"))
			}
			done(m, hdr, buf, r.Err())
			r.Release()
			return
		}
		buf := make([]byte, m.Length)
		m.RecvData(buf, &Params{Callback: func(r *Request) {
			if r.Info().Length != len(buf) {
				done(m, hdr, nil, fmt.Errorf("RecvData length %d, message %d", r.Info().Length, len(buf)))
			}
			done(m, hdr, buf, r.Err())
			r.Release()
		}})
	}
}

func init() {
	// ambig: echo every amBig message back as amBigReply.
	childRoles["ambig"] = func(nd *node) error {
		var errs []error
		nd.w.SetAMHandler(amBig, amEcho(os.Getenv(amKeepEnv) == "1", func(m *AMMessage, hdr, data []byte, err error) {
			if err != nil {
				errs = append(errs, err)
				return
			}
			m.Reply.AMSend(amBigReply, hdr, data, nil).Release()
		}))
		if err := nd.waitQuit(); err != nil {
			return err
		}
		if len(errs) > 0 {
			return errs[0]
		}
		return nil
	}
	// amsendbig: send one 4 MiB amBig message to rank 0 and wait.
	childRoles["amsendbig"] = func(nd *node) error {
		r := nd.eps[0].AMSend(amBig, []byte("hdr"), pattern(4<<20, 9), nil)
		nd.waitQuit()
		return r.Err()
	}
}

// TestAMLarge sends active messages of every protocol both ways: one
// fragment, eager fragments (rendezvous threshold infinite) and
// rendezvous, the receiving handler keeping eager data or receiving it
// with RecvData. Both sides run one failover mode, set here (off, and
// any: sequenced, with the limits of the smallest fragment among the
// lanes), so that the reply, sent by the child with its own endpoint's
// limits, takes the protocol our endpoint's limits predict.
func TestAMLarge(t *testing.T) {
	for _, mode := range []failover.Mode{failover.Off, failover.AnyTransport} {
		t.Run(mode.String(), func(t *testing.T) { testAMLarge(t, mode) })
	}
}

func testAMLarge(t *testing.T, mode failover.Mode) {
	for _, c := range []struct {
		name  string
		thres string
		keep  bool
	}{{"rndv", "", false}, {"eager-recvdata", "inf", false}, {"eager-keep", "inf", true}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Failover: failover.Policy{Mode: mode}}
			if mode != failover.Off {
				cfg.Failover = failover.DefaultPolicy()
				cfg.Failover.Mode = mode
			}
			env := []string{EnvFailover + "=" + mode.String()}
			if c.thres != "" {
				cfg.RndvThresh = ThreshInf
				env = append(env, EnvRndvThresh+"="+c.thres)
			}
			if c.keep {
				env = append(env, amKeepEnv+"=1")
			}
			nd := world(t, 2, "ambig", cfg, env...)
			type reply struct {
				hdr, data []byte
				rndv      bool
				err       error
			}
			var got []reply
			nd.w.SetAMHandler(amBigReply, amEcho(c.keep, func(m *AMMessage, hdr, data []byte, err error) {
				got = append(got, reply{hdr, data, m.Rndv, err})
			}))
			ep := nd.eps[1]
			hdr := []byte("header")
			max := ep.MaxAM() - len(hdr)
			// the last two reuse assembly buffers of earlier messages
			for i, n := range []int{0, 1, max, max + 1, 64 << 10, 4 << 20, 64<<10 + 1, max + 2} {
				data := pattern(n, byte(i))
				nd.must(nd.wait(ep.AMSend(amBig, hdr, data, nil)))
				ctx, cancel := testCtx()
				for len(got) <= i && ctx.Err() == nil {
					nd.w.Progress()
				}
				cancel()
				if len(got) <= i {
					t.Fatalf("size %d: no reply", n)
				}
				g := got[i]
				if g.err != nil {
					t.Fatalf("size %d: %v", n, g.err)
				}
				if !bytes.Equal(g.hdr, hdr) || !bytes.Equal(g.data, data) {
					t.Fatalf("size %d: reply differs (header %q, %d bytes)", n, g.hdr, len(g.data))
				}
				if wantRndv := c.thres == "" && n > max && n >= ep.amRndvMin(); g.rndv != wantRndv {
					t.Fatalf("size %d: rendezvous %v, want %v", n, g.rndv, wantRndv)
				}
			}
			if nd.w.amFrags.Len() != 0 {
				t.Fatalf("%d partial active messages left", nd.w.amFrags.Len())
			}
			nd.quit(1)
			nd.exitOK(1)
		})
	}
}

// TestAMRndvNoHandler: a rendezvous active message for an id without
// handler completes the send with an error.
func TestAMRndvNoHandler(t *testing.T) {
	nd := world(t, 2, "am", Config{})
	ep := nd.eps[1]
	// rank 1 has no amBig handler: the send completes with an error
	err := nd.wait(ep.AMSend(amBig, nil, make([]byte, 1<<20), nil))
	if !errors.Is(err, uct.ErrUnsupported) {
		t.Fatalf("rendezvous AM without handler: %v", err)
	}
	nd.quit(1)
	nd.exitOK(1)
}

// TestAMRndvSelf: a handler that returns without receiving
// rendezvous data drops it and the sender completes; RecvData into a
// short buffer truncates and fails the sender; a kept message can be
// received after the handler returned, once.
func TestAMRndvSelf(t *testing.T) {
	nd := world(t, 2, "ambig", Config{})
	ep := nd.eps[1]
	data := pattern(256<<10, 1)
	var kept []*AMMessage
	mode := "ignore"
	nd.w.SetAMHandler(amBigReply, func(m *AMMessage) {
		switch mode {
		case "keep":
			m.Keep()
			kept = append(kept, m)
		case "short":
			r := m.RecvData(make([]byte, m.Length-1), nil)
			var te *TruncatedError
			if !errors.As(r.Err(), &te) || te.Length != m.Length {
				t.Errorf("short RecvData: %v", r.Err())
			}
			r.Release()
		}
		kept = append(kept, nil)
	})
	for _, mode = range []string{"ignore", "short", "keep"} {
		kept = kept[:0]
		nd.must(nd.wait(ep.AMSend(amBig, nil, data, nil)))
		ctx, cancel := testCtx()
		for len(kept) == 0 && ctx.Err() == nil {
			nd.w.Progress()
		}
		cancel()
		if len(kept) == 0 {
			t.Fatalf("%s: no reply", mode)
		}
	}
	m := kept[0]
	buf := make([]byte, len(data))
	nd.must(nd.wait(m.RecvData(buf, nil)))
	if !bytes.Equal(buf, data) {
		t.Fatal("kept rendezvous message: data differs")
	}
	if err := nd.wait(m.RecvData(buf, nil)); !errors.Is(err, uct.ErrInvalidParam) {
		t.Fatalf("second RecvData: %v", err)
	}
	nd.quit(1)
	nd.exitOK(1)
}

func init() {
	// amfail: send a 4 MiB amBig to rank 0; keep every amBig message
	// that arrives without receiving it and answer it with an empty
	// amBigReply; wait to be killed.
	childRoles["amfail"] = func(nd *node) error {
		nd.w.SetAMHandler(amBig, func(m *AMMessage) {
			m.Keep()
			m.Reply.AMSend(amBigReply, nil, nil, nil).Release()
		})
		r := nd.eps[0].AMSend(amBig, []byte("hdr"), pattern(4<<20, 9), nil)
		nd.waitQuit()
		return r.Err()
	}
}

// TestAMRndvPeerFailure: rendezvous active messages in flight both ways
// when the peer is SIGKILLed. The send completes with the transport's
// status, a kept message's RecvData with the endpoint's failure, each
// once, and a partial eager message from the peer is dropped.
func TestAMRndvPeerFailure(t *testing.T) {
	nd := world(t, 2, "amfail", Config{ErrorMode: ErrorModePeer})
	ep := nd.eps[1]
	var kept *AMMessage
	replied := false
	nd.w.SetAMHandler(amBig, func(m *AMMessage) {
		m.Keep()
		kept = m
	})
	nd.w.SetAMHandler(amBigReply, func(*AMMessage) { replied = true })
	send := ep.AMSend(amBig, nil, pattern(4<<20, 3), nil)
	ctx, cancel := testCtx()
	defer cancel()
	for (kept == nil || !replied) && ctx.Err() == nil {
		nd.w.Progress()
	}
	if kept == nil || !kept.Rndv || !replied {
		t.Fatalf("rendezvous messages not announced (kept %v, replied %v)", kept, replied)
	}
	// the first fragment of an eager message from rank 1
	frag := append((&userFrag{dst: ep.id, id: amBig, mid: 1 << 40, total: 100000}).encode(nil), make([]byte, 1000)...)
	nd.w.onUserFrag(nil, frag, 0)
	if nd.w.amFrags.Len() == 0 {
		t.Fatal("partial message not queued")
	}
	nd.kill(1)
	for len(nd.errs) == 0 && ctx.Err() == nil {
		nd.w.Progress()
	}
	if len(nd.errs) == 0 {
		t.Fatal("no endpoint error")
	}
	if e := <-nd.errs; e.rank != 1 {
		t.Fatalf("error from rank %d", e.rank)
	}
	if err := nd.wait(send); !errors.Is(err, uct.ErrPeerFailed) {
		t.Fatalf("send: %v", err)
	}
	if n := nd.w.amFrags.Len(); n != 0 {
		t.Fatalf("%d partial messages left after the failure", n)
	}
	r := kept.RecvData(make([]byte, kept.Length), nil)
	if err := nd.wait(r); !errors.Is(err, uct.ErrPeerFailed) {
		t.Fatalf("RecvData: %v", err)
	}
	nd.w.Purge(ep)
}
