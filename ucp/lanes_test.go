package ucp

import (
	"bytes"
	"testing"
)

// TestLaneChoice: two workers of one host pick shm when both have it, and
// talk over rc when UCGO_TLS leaves them only rc.
func TestLaneChoice(t *testing.T) {
	if !rcUsable() {
		t.Skip("no netdev other than loopback is up with IPv4: rc is not a default transport here")
	}
	for _, c := range []struct{ tls, want string }{{"", "shm"}, {"shm,rc", "shm"}, {"rc", "rc"}} {
		t.Run("tls="+c.tls, func(t *testing.T) {
			ws := workersWithTLS(t, c.tls)
			ep, err := ws[0].Connect(ws[1].Address(), EPParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ep.lanes) != 1 || ep.lanes[0].attr.Transport != c.want {
				t.Fatalf("%d lanes, first over %s; want one %s lane", len(ep.lanes), ep.lanes[0].attr.Transport, c.want)
			}
			for _, n := range []int{8, 3000, 100000} {
				out, in := pattern(n, 3), make([]byte, n)
				r := ws[1].TagRecv(in, 7, exact, nil)
				s := ep.TagSend(out, 7, nil)
				ctx, cancel := testCtx()
				for !r.Done() || !s.Done() {
					ws[0].Progress()
					ws[1].Progress()
					if ctx.Err() != nil {
						t.Fatalf("%d bytes: not done", n)
					}
				}
				cancel()
				if r.Err() != nil || s.Err() != nil || !bytes.Equal(in, out) {
					t.Fatalf("%d bytes: recv %v, send %v, equal %v", n, r.Err(), s.Err(), bytes.Equal(in, out))
				}
				if back := r.Info().Sender; back == nil || back.lanes[0].attr.Transport != c.want {
					t.Fatalf("the endpoint back does not use %s", c.want)
				}
			}
		})
	}
}

// workersWithTLS opens two workers, each in a context of its own whose
// UCGO_TLS is tls; the test's cleanup closes them.
func workersWithTLS(t *testing.T, tls string) [2]*Worker {
	t.Helper()
	env := func(k string) string {
		if k == EnvTLS {
			return tls
		}
		return ""
	}
	var ws [2]*Worker
	for i := range ws {
		uc, err := newContext(Config{}, env)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { uc.Close() })
		w, err := uc.NewWorker()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Close() })
		ws[i] = w
	}
	return ws
}
