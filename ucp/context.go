package ucp

import (
	"bytes"
	"fmt"
	"os"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/uct"
)

// Context holds the configuration and one memory domain per transport.
// Workers are created from it. A Context is safe for concurrent use.
type Context struct {
	cfg  Config
	mds  []*mdEntry
	host string
	// zcopyAuto: ZcopyThresh was left to its default, so an AM lane's
	// own estimate (uct.IfaceAttr.AMZcopyMin) takes its place.
	zcopyAuto bool
}

type mdEntry struct {
	comp uct.Component
	md   uct.MD
	attr uct.MDAttr
}

// NewContext opens the configured transports' memory domains. The fields
// of cfg left at their zero value take their UCGO_* environment
// variable's value, if set, then their default; the fields cfg sets win
// (see "Configuration precedence" in the package doc).
func NewContext(cfg Config) (*Context, error) {
	return newContext(cfg, os.Getenv)
}

func newContext(cfg Config, getenv func(string) string) (*Context, error) {
	chosen := cfg.Transports != nil
	if err := applyEnv(&cfg, envOrOS(getenv)); err != nil {
		return nil, err
	}
	if !chosen && len(cfg.NetDevices) > 0 {
		ts, err := withNetDevices(cfg.Transports, cfg.NetDevices)
		if err != nil {
			return nil, err
		}
		cfg.Transports = ts
	}
	if cfg.Transports == nil {
		cfg.Transports = DefaultTransports()
	}
	if cfg.KeepaliveInterval == 0 {
		cfg.KeepaliveInterval = defaultKeepalive
	}
	zcopyAuto := cfg.ZcopyThresh == 0
	if zcopyAuto {
		cfg.ZcopyThresh = defaultZcopyThresh
	}
	fo, err := resolveFailover(cfg.Failover)
	if err != nil {
		return nil, err
	}
	cfg.Failover = fo
	c := &Context{cfg: cfg, host: hostID(), zcopyAuto: zcopyAuto}
	var errs error
	for _, comp := range cfg.Transports {
		md, err := comp.OpenMD(uct.MDParams{})
		if err != nil {
			errs = multierr.Append(errs, fmt.Errorf("ucp: transport %s: %w", comp.Name(), err))
			continue
		}
		c.mds = append(c.mds, &mdEntry{comp: comp, md: md, attr: md.Attr()})
	}
	if len(c.mds) == 0 {
		if errs == nil {
			errs = fmt.Errorf("ucp: no transports: %w", uct.ErrUnreachable)
		}
		return nil, errs
	}
	return c, nil
}

// Config returns the effective configuration (defaults and environment
// applied).
func (c *Context) Config() Config { return c.cfg }

// Close closes the memory domains. Close workers first.
func (c *Context) Close() error {
	var err error
	for _, m := range c.mds {
		err = multierr.Append(err, m.md.Close())
	}
	c.mds = nil
	return err
}

// hostID names this host and boot: shm is only usable between workers
// with the same host id.
func hostID() string {
	h, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	s := h + "/" + string(bytes.TrimSpace(boot))
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
