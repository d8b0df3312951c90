package ucp

import (
	"errors"
	"testing"
	"time"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// UCGO_FAILOVER sets the Mode of a policy the program left at zero; the
// numbers left at zero take the defaults; a program's policy wins; off
// is the zero policy; bad values are errors.
func TestFailoverConfig(t *testing.T) {
	shmOnly := builtinTransports()[:1]
	open := func(cfg Config, env map[string]string) (Config, error) {
		t.Helper()
		cfg.Transports = shmOnly
		ctx, err := newContext(cfg, func(k string) string { return env[k] })
		if err != nil {
			return Config{}, err
		}
		defer ctx.Close()
		return ctx.Config(), nil
	}
	c, err := open(Config{}, map[string]string{EnvFailover: "any"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Failover != failover.DefaultPolicy() {
		t.Errorf("UCGO_FAILOVER=any: %+v, want the default policy", c.Failover)
	}
	c, err = open(Config{}, map[string]string{EnvFailover: "same"})
	if err != nil || c.Failover.Mode != failover.SameTransport || c.Failover.ProbeInterval != failover.DefaultPolicy().ProbeInterval {
		t.Errorf("UCGO_FAILOVER=same: %+v %v", c.Failover, err)
	}
	set := failover.Policy{Mode: failover.SameTransport, ProbeInterval: 50 * time.Millisecond}
	c, err = open(Config{Failover: set}, map[string]string{EnvFailover: "off"})
	if err != nil || c.Failover.Mode != failover.SameTransport || c.Failover.ProbeInterval != 50*time.Millisecond || c.Failover.ProbeMisses == 0 {
		t.Errorf("the program's policy under UCGO_FAILOVER=off: %+v %v", c.Failover, err)
	}
	c, err = open(Config{Failover: failover.Policy{ProbeInterval: time.Second}}, nil)
	if err != nil || c.Failover != (failover.Policy{}) {
		t.Errorf("mode off: %+v %v, want the zero policy", c.Failover, err)
	}
	if _, err := open(Config{}, map[string]string{EnvFailover: "sideways"}); !errors.Is(err, uct.ErrInvalidParam) || !errors.Is(err, failover.ErrBadMode) {
		t.Errorf("UCGO_FAILOVER=sideways: %v", err)
	}
	if _, err := open(Config{Failover: failover.Policy{Mode: failover.AnyTransport, Backoff: -1}}, nil); !errors.Is(err, failover.ErrBadPolicy) {
		t.Errorf("negative backoff: %v", err)
	}
}
