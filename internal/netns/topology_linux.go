package netns

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
)

// naming is what every topology starts from: its options, a unique base
// name for its namespaces (Prefix+"<pid>-<random>") and the random x.y
// of its 10.x.y.0/24 subnets.
type naming struct {
	cfg  config
	base string
	x, y byte
}

// newNaming applies opts, sweeps namespaces left by dead processes and
// draws the names and subnets of a new topology.
func newNaming(opts []Option) (naming, error) {
	nm := naming{cfg: config{mtu: DefaultMTU}}
	for _, o := range opts {
		o(&nm.cfg)
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nm, err
	}
	Sweep()
	nm.base = fmt.Sprintf("%s%d-%s", Prefix, os.Getpid(), hex.EncodeToString(rnd[:]))
	nm.x, nm.y = 16+rnd[0]%224, rnd[1]
	return nm, nil
}

// forTest is a topology built for a test: it skips the test unless root,
// builds it, has tb.Cleanup close whatever was created (also when building
// failed half way) and returns it, or nil with the error.
func forTest[T interface{ Close() error }](tb testing.TB, build func() (T, bool, error)) (T, error) {
	tb.Helper()
	RequireRoot(tb)
	t, created, err := build()
	if created {
		tb.Cleanup(func() {
			if err := t.Close(); err != nil {
				tb.Errorf("netns cleanup: %v", err)
			}
		})
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return t, nil
}
