package ucp

import (
	"bytes"
	"testing"
)

const amMsg = 41

// TestAMEagerMessageReuse: the worker hands every eager handler call the
// same AMMessage unless a handler keeps it; a kept message (one fragment
// or several) keeps its fields and data after later messages, and
// RecvData reads it after its handler returned.
func TestAMEagerMessageReuse(t *testing.T) {
	ws, ep := shmPair(t, Config{RndvThresh: ThreshInf}) // larger messages in eager fragments
	type call struct {
		m    *AMMessage
		id   uint16
		data []byte
	}
	var calls []call
	keepNext := false
	ws[1].SetAMHandler(amMsg, func(m *AMMessage) {
		c := call{m: m, id: m.ID}
		if keepNext {
			c.data = m.Keep()
		}
		calls = append(calls, c)
	})
	send := func(data []byte, keep bool) call {
		t.Helper()
		keepNext = keep
		n := len(calls) + 1
		s := ep.AMSend(amMsg, []byte("h"), data, nil)
		ctx, cancel := testCtx()
		defer cancel()
		for (!s.Done() || len(calls) < n) && ctx.Err() == nil {
			ws[0].Progress()
			ws[1].Progress()
		}
		if len(calls) < n {
			t.Fatal("the handler did not run")
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		s.Release()
		return calls[n-1]
	}
	big := pattern(3*ep.MaxAM()+5, 3) // several fragments
	a := send([]byte("first"), false)
	b := send([]byte("second"), false)
	if a.m != b.m {
		t.Fatal("a message no handler kept was not reused")
	}
	k1 := send([]byte("kept"), true)
	if k1.m != b.m {
		t.Fatal("the kept message is not the worker's current one")
	}
	k2 := send(big, true)
	c := send([]byte("third"), false)
	if c.m == k1.m || c.m == k2.m || k2.m == k1.m {
		t.Fatal("a kept message was handed to a later handler")
	}
	for _, k := range []struct {
		c    call
		want []byte
	}{{k1, []byte("kept")}, {k2, big}} {
		m := k.c.m
		if m.ID != amMsg || m.Length != len(k.want) || m.Reply == nil || m.Rndv || !bytes.Equal(m.Data, k.want) ||
			!bytes.Equal(k.c.data, k.want) {
			t.Fatalf("kept message changed: id %d, length %d, data %q", m.ID, m.Length, m.Data[:min(len(m.Data), 8)])
		}
		buf := make([]byte, m.Length)
		r := m.RecvData(buf, nil)
		if !r.Done() || r.Err() != nil || !bytes.Equal(buf, k.want) {
			t.Fatalf("RecvData of a kept message: done %v, err %v", r.Done(), r.Err())
		}
		r.Release()
	}
}
