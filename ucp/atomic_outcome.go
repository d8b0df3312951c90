package ucp

import (
	"errors"
	"fmt"

	"github.com/ucgo/ucgo/failover"
	"github.com/ucgo/ucgo/uct"
)

// atomicOutcome is the status of request r, posted, that failed with
// err: for an atomic whose target may have applied it (its answer was
// lost with the lane, or the endpoint failed or closed while it was in
// flight) err is wrapped so that it also matches
// failover.ErrOutcomeUnknown, whatever the failover mode; an atomic the
// target refused (protection, a bad or unsupported operation) was not
// applied and keeps its status, as does every other request.
func atomicOutcome(r *Request, err error) error {
	if err == nil || r.kind != kAtomic && r.kind != kAtomicFetch || errors.Is(err, failover.ErrOutcomeUnknown) {
		return err
	}
	switch uct.StatusOf(err) {
	case uct.ErrRemoteProtection, uct.ErrInvalidParam, uct.ErrUnsupported:
		return err
	}
	return fmt.Errorf("%w: %w", failover.ErrOutcomeUnknown, err)
}
