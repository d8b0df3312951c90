package verbs

import (
	"context"
	"fmt"
	"time"
)

// AckWait bounds how long Close of a QP, CQ or SRQ waits for the acks of
// its async events (see CloseContext).
const AckWait = 10 * time.Second

// waitAcks waits, bounded by ctx, until every async event owned by obj
// that someone received has been acked. Events still queued are
// discarded: nobody can ack what nobody got.
func (d *Device) waitAcks(ctx context.Context, what string, obj any) error {
	if err := d.events.WaitAcksContext(ctx, obj); err != nil {
		return fmt.Errorf("verbs: destroy %s: %w", what, err)
	}
	return nil
}

func ackCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), AckWait)
}

// Close destroys the QP (ibv_destroy_qp): outstanding work is dropped
// without completions, the QP posts no more async events, and Close
// returns once each of its events that was received (Events().Get) has
// been acked, or after AckWait with an error wrapping uct.ErrTimedOut.
// The QP is destroyed either way; a later Close only waits for the acks
// again.
func (qp *QP) Close() error {
	ctx, cancel := ackCtx()
	defer cancel()
	return qp.CloseContext(ctx)
}

// CloseContext is Close, with the wait for acks bounded by ctx.
func (qp *QP) CloseContext(ctx context.Context) error {
	qp.destroy()
	return qp.d.waitAcks(ctx, qp.name(), qp)
}

// Close destroys the CQ; it fails with ErrBusy while QPs use it. Like
// QP.Close, it then waits up to AckWait for the acks of its async events.
func (cq *CQ) Close() error {
	ctx, cancel := ackCtx()
	defer cancel()
	return cq.CloseContext(ctx)
}

// CloseContext is Close, with the wait for acks bounded by ctx.
func (cq *CQ) CloseContext(ctx context.Context) error {
	if err := cq.destroy(); err != nil {
		return err
	}
	return cq.d.waitAcks(ctx, fmt.Sprintf("cq %d", cq.id), cq)
}

// Close destroys the SRQ; it fails with ErrBusy while QPs use it. Like
// QP.Close, it then waits up to AckWait for the acks of its async events.
func (s *SRQ) Close() error {
	ctx, cancel := ackCtx()
	defer cancel()
	return s.CloseContext(ctx)
}

// CloseContext is Close, with the wait for acks bounded by ctx.
func (s *SRQ) CloseContext(ctx context.Context) error {
	if err := s.destroy(); err != nil {
		return err
	}
	return s.d.waitAcks(ctx, s.name(), s)
}
