package ucp

import (
	"fmt"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// Keepalive has two parts, both run once per KeepaliveInterval from
// Progress in ErrorModePeer:
//
//   - the transports' own liveness check of every lane (CheckLiveness:
//     shm asks the kernel whether the peer process exists, rc sends a
//     zero-length write, which a peer whose provider no longer answers
//     fails with retry exceeded);
//   - heartbeats: the worker sends one carrying its interval on every
//     endpoint each round and counts the rounds in which none arrived
//     (more than keepaliveMisses rounds if the peer's interval is longer
//     than ours: the rounds cover keepaliveMisses of the peer's
//     intervals).
//
// With Config.DetectSilentPeers a peer that missed that many rounds is
// silent and its endpoint fails with an error matching
// uct.ErrEndpointTimeout. A silent peer is one whose worker sends nothing
// we receive: it is stopped (SIGSTOP), hung, frozen or cut off, or it
// does not call Progress (directly or by waiting on a request) for about
// keepaliveMisses intervals; the last is why detection is off by
// default. Detection is armed by the peer's first heartbeat, so peers
// that do not send heartbeats (ErrorModeNone, keepalive disabled) are
// never judged silent, and rounds that our own worker skipped (it did not
// progress) are not counted.
const keepaliveMisses = 3

// heartbeat is one keepalive round for the healthy endpoint ep (lock
// held): it judges the peer and sends our heartbeat. It reports whether
// ep failed.
func (w *Worker) heartbeat(ep *Endpoint) bool {
	if !ep.ridKnown || ep.closed {
		return false
	}
	own := w.cfg.KeepaliveInterval
	if ep.kaPeer != 0 {
		if ep.kaHeard {
			ep.kaMissed = 0
		} else {
			ep.kaMissed++
		}
		ep.kaHeard = false
		peer := time.Duration(ep.kaPeer) * time.Millisecond
		allowed := keepaliveMisses * max(1, int((peer+own-1)/own))
		if w.cfg.DetectSilentPeers && ep.kaMissed >= allowed {
			w.failEP(ep, uct.NewOpError("", "keepalive", ep.name, uct.ErrEndpointTimeout,
				fmt.Errorf("no heartbeat from the peer in %d keepalive rounds", ep.kaMissed)))
			return true
		}
	}
	ms := uint32(max(1, own.Milliseconds()))
	ep.ctl(amKeepalive, func(b []byte) []byte {
		return le.AppendUint32(le.AppendUint32(b, ep.rid), ms)
	})
	return ep.err != nil
}

// onKeepalive receives a heartbeat (inside iface Progress).
func (w *Worker) onKeepalive(_ any, data []byte, _ uct.AMFlags) {
	dst, ms, err := decodeKeepalive(data)
	if err != nil || ms == 0 {
		return
	}
	w.lockCB()
	defer w.unlockCB()
	if ep := w.epByID(dst); ep != nil {
		ep.kaHeard = true
		ep.kaPeer = ms
	}
}
