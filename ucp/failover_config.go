package ucp

import (
	"fmt"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// resolveFailover completes a failover policy: with Mode Off it is the
// zero Policy; otherwise the numbers left at zero take
// failover.DefaultPolicy's values and the result is validated.
func resolveFailover(p failover.Policy) (failover.Policy, error) {
	if p.Mode == failover.Off {
		return failover.Policy{}, nil
	}
	d := failover.DefaultPolicy()
	if p.Attempts == 0 {
		p.Attempts = d.Attempts
	}
	if p.Backoff == 0 {
		p.Backoff = d.Backoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = max(d.MaxBackoff, p.Backoff)
	}
	if p.ProbeInterval == 0 {
		p.ProbeInterval = d.ProbeInterval
	}
	if p.ProbeMisses == 0 {
		p.ProbeMisses = d.ProbeMisses
	}
	if p.UpProbes == 0 {
		p.UpProbes = d.UpProbes
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("ucp: failover: %w: %w", uct.ErrInvalidParam, err)
	}
	return p, nil
}
