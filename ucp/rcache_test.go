package ucp

import (
	"bytes"
	"testing"
)

// TestTagRndvManyBuffers sends more distinct rendezvous buffers than the
// registration and key caches hold, with several in flight, and reuses
// each buffer with new content, so entries are evicted while others are in
// use and hits must see the new data.
func TestTagRndvManyBuffers(t *testing.T) {
	for _, scheme := range []string{"get", "put"} {
		t.Run(scheme, func(t *testing.T) {
			cfg := Config{}
			if scheme == "put" {
				cfg.RndvScheme = RndvPut
			}
			nd := world(t, 2, "echo", cfg, EnvRndvScheme+"="+scheme)
			ep := nd.eps[1]
			const nbuf, batch, size = regCacheMax + 44, 32, 20000
			outs, ins := make([][]byte, nbuf), make([][]byte, nbuf)
			for i := range outs {
				outs[i], ins[i] = make([]byte, size), make([]byte, size)
			}
			for round := 0; round < 2; round++ {
				for start := 0; start < nbuf; start += batch {
					var reqs []*Request
					for i := start; i < min(start+batch, nbuf); i++ {
						copy(outs[i], pattern(size, byte(i+round)))
						tag := uint32(1000 + i)
						reqs = append(reqs, nd.w.TagRecv(ins[i], mkTag(1, tag), exact, nil), ep.TagSend(outs[i], mkTag(0, tag), nil))
					}
					for _, r := range reqs {
						nd.must(nd.wait(r))
						r.Release()
					}
					for i := start; i < min(start+batch, nbuf); i++ {
						if !bytes.Equal(ins[i], outs[i]) {
							t.Fatalf("round %d buffer %d: content differs", round, i)
						}
					}
				}
			}
			nd.w.lock()
			cached := len(nd.w.regs.m)
			nd.w.unlock()
			if cached > regCacheMax {
				t.Errorf("%d registrations cached, limit %d", cached, regCacheMax)
			}
			nd.quit(1)
			nd.exitOK(1)
		})
	}
}
