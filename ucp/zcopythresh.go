package ucp

import "github.com/ucgo/ucgo/uct"

// defaultZcopyThresh is Config.ZcopyThresh's default where the AM lane
// gives no estimate of its own.
const defaultZcopyThresh = 4096

// eagerZcopyMin returns the smallest eager tag payload that goes by
// AMZcopy on the AM lane of attributes at (lock held). ZcopyThresh set
// by the user (Config or UCGO_ZCOPY_THRESH) holds for every lane; left
// to its default, a lane that estimates where its AMZcopy starts to cost
// less than AMBcopy (uct.IfaceAttr.AMZcopyMin, header included) has that
// figure, as UCX derives its zcopy thresholds per transport. On rc,
// whose AMZcopy copies into a bounce buffer as AMBcopy does, eager zero
// copy would only add a request that bcopy does not need (a bcopy send
// that fits completes at once, without one).
func (ep *Endpoint) eagerZcopyMin(at *uct.IfaceAttr) int {
	if ep.w.ctx.zcopyAuto && at.AMZcopyMin > 0 {
		return max(at.AMZcopyMin-eagerHdr, 1)
	}
	return ep.w.cfg.ZcopyThresh
}
