package ucp

import "testing"

// LanesTo names the lanes Connect opens: the same transports in the same
// order, shm first with rc as fallback on one host, rc alone when
// UCGO_TLS leaves only rc.
func TestLanesTo(t *testing.T) {
	if !rcUsable() {
		t.Skip("no netdev other than loopback is up with IPv4: rc is not a default transport here")
	}
	for _, c := range []struct {
		tls  string
		want []string
	}{{"", []string{"shm", "rc(fallback)"}}, {"rc", []string{"rc"}}, {"shm", []string{"shm"}}} {
		t.Run("tls="+c.tls, func(t *testing.T) {
			ws := workersWithTLS(t, c.tls)
			lanes, err := ws[0].LanesTo(ws[1].Address())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range lanes {
				s := l.Transport
				if l.Fallback {
					s += "(fallback)"
				}
				got = append(got, s)
			}
			if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) || (len(got) > 1 && got[1] != c.want[1]) {
				t.Fatalf("LanesTo: %v, want %v", got, c.want)
			}
			ep, err := ws[0].Connect(ws[1].Address(), EPParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ep.lanes) == 0 || ep.lanes[0].attr.Transport != lanes[0].Transport || ep.lanes[0].attr.Device != lanes[0].Device {
				t.Fatalf("Connect opened %+v, LanesTo said %+v first", ep.lanes, lanes[0])
			}
			if _, err := ws[0].LanesTo([]byte("junk")); err == nil {
				t.Fatal("LanesTo accepted a bad address")
			}
		})
	}
}
