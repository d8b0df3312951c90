package ucp

import (
	"net/netip"
	"testing"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/uct"
)

// BenchmarkEagerProtoCPU is BenchmarkTagCPU for 4 KiB eager messages
// over shm and over rc on lo, each sent with ZcopyThresh at its default
// and set to 4096 (eager zero copy) and to 1 GiB (eager bcopy): the CPU
// cost of each protocol's path.
func BenchmarkEagerProtoCPU(b *testing.B) {
	for _, tl := range []struct {
		name string
		ts   func() []uct.Component
	}{
		{"shm", func() []uct.Component { return nil }},
		{"rc", func() []uct.Component {
			return []uct.Component{rc.New(rc.Config{Device: "lo", Addr: netip.MustParseAddr("127.0.0.1"), Port: -1})}
		}},
	} {
		for _, c := range []struct {
			name  string
			zcopy int
		}{{"default", 0}, {"zcopy", 4096}, {"bcopy", 1 << 30}} {
			b.Run(tl.name+"/"+c.name, func(b *testing.B) {
				benchTagCPU(b, Config{Transports: tl.ts(), ZcopyThresh: c.zcopy}, 4096)
			})
		}
	}
}
