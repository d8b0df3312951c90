package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"time"

	"go.uber.org/multierr"

	"github.com/ucgo/ucgo/internal/oobexch"
	"github.com/ucgo/ucgo/internal/roce"
	"github.com/ucgo/ucgo/transport/rc/verbs"
)

// Work request ids, as in rc_pingpong.c.
const (
	recvWRID = 1
	sendWRID = 2
)

// pageSize is rc_pingpong's page_size for -c (sysconf(_SC_PAGESIZE)).
var pageSize = os.Getpagesize()

// ppCtx is rc_pingpong.c's pingpong_context over ucgo's verbs: one device,
// PD, MR over a buffer of -s bytes (filled with 0x7b), CQ of rx_depth+1
// entries (with a completion channel under -e) and one RC QP in INIT.
type ppCtx struct {
	o       *options
	dev     *verbs.Device
	pd      *verbs.PD
	mr      *verbs.MR
	ch      *verbs.CompChannel
	cq      *verbs.CQ
	qp      *verbs.QP
	buf     []byte
	pending int
	mtu     verbs.MTU
}

// initCtx is pp_init_ctx: open, allocate, create the QP and move it to
// INIT with no remote access.
func initCtx(o *options) (*ppCtx, error) {
	mtu, _ := roce.MTUOf(o.mtu) // parseFlags checked it
	cfg := verbs.Config{Interface: o.dev}
	if o.localIP != "" {
		a, err := netip.ParseAddr(o.localIP)
		if err != nil {
			return nil, fmt.Errorf("-a: %w", err)
		}
		cfg.Addr = a
	}
	if o.ibPort != 1 {
		return nil, fmt.Errorf("couldn't get port info: port %d (the device has port 1 only)", o.ibPort)
	}
	dev, err := verbs.Open(cfg)
	if err != nil {
		return nil, fmt.Errorf("couldn't get context: %w", err)
	}
	c := &ppCtx{o: o, dev: dev, mtu: mtu}
	if p := dev.LocalAddr().Port(); p != roce.Port {
		// Peers (rxe among them) send to 4791 whatever our source port.
		return nil, multierr.Append(fmt.Errorf("couldn't get context: UDP port %d is taken on %v (got %d)", roce.Port, dev.LocalAddr().Addr(), p), c.close())
	}
	if err := c.setup(); err != nil {
		return nil, multierr.Append(err, c.close())
	}
	return c, nil
}

func (c *ppCtx) setup() error {
	o := c.o
	var err error
	c.buf = make([]byte, o.size)
	for i := range c.buf {
		c.buf[i] = 0x7b
	}
	if c.pd, err = c.dev.AllocPD(); err != nil {
		return fmt.Errorf("couldn't allocate PD: %w", err)
	}
	if c.mr, err = c.pd.RegMR(c.buf, verbs.AccessLocalWrite); err != nil {
		return fmt.Errorf("couldn't register MR: %w", err)
	}
	if o.events {
		if c.ch, err = c.dev.NewCompChannel(); err != nil {
			return fmt.Errorf("couldn't create completion channel: %w", err)
		}
	}
	if c.cq, err = c.dev.CreateCQ(o.rxDepth+1, c.ch); err != nil {
		return fmt.Errorf("couldn't create CQ: %w", err)
	}
	c.qp, err = c.pd.CreateQP(verbs.QPInitAttr{SendCQ: c.cq, RecvCQ: c.cq,
		Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: o.rxDepth, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return fmt.Errorf("couldn't create QP: %w", err)
	}
	a := &verbs.QPAttr{State: verbs.QPSInit, PKeyIndex: 0, PortNum: uint8(o.ibPort)}
	if err := c.qp.Modify(a, verbs.QPAttrState|verbs.QPAttrPKeyIndex|verbs.QPAttrPort|verbs.QPAttrAccessFlags); err != nil {
		return fmt.Errorf("failed to modify QP to INIT: %w", err)
	}
	return nil
}

// close is pp_close_ctx.
func (c *ppCtx) close() error {
	var err error
	if c.qp != nil {
		err = multierr.Append(err, c.qp.Close())
	}
	if c.cq != nil {
		err = multierr.Append(err, c.cq.Close())
	}
	if c.ch != nil {
		err = multierr.Append(err, c.ch.Close())
	}
	if c.mr != nil {
		err = multierr.Append(err, c.mr.Dereg())
	}
	if c.pd != nil {
		err = multierr.Append(err, c.pd.Close())
	}
	return multierr.Append(err, c.dev.Close())
}

// connect is pp_connect_ctx: RTR towards dest (path MTU -m, min RNR timer
// 12, one incoming READ/atomic), then RTS (timeout -T, 14 by default, retry_cnt 7,
// rnr_retry 7, one outgoing READ/atomic) with our PSN.
func (c *ppCtx) connect(myPSN uint32, dest oobexch.Dest) error {
	g := netip.AddrFrom16(dest.GID)
	if !g.Unmap().Is4() || g.Unmap().IsUnspecified() {
		return fmt.Errorf("failed to modify QP to RTR: remote GID %v is no IPv4 RoCEv2 GID (run the peer with -g): %w", g, errNoGID)
	}
	a := &verbs.QPAttr{State: verbs.QPSRTR, PathMTU: c.mtu, DestQPN: dest.QPN, RQPSN: dest.PSN,
		MaxDestRdAtomic: 1, MinRNRTimer: 12,
		AH: verbs.AHAttr{DGID: g, HopLimit: 1, SL: uint8(c.o.sl)}}
	if err := c.qp.Modify(a, verbs.QPAttrState|verbs.QPAttrAV|verbs.QPAttrPathMTU|verbs.QPAttrDestQPN|
		verbs.QPAttrRQPSN|verbs.QPAttrMaxDestRdAtomic|verbs.QPAttrMinRNRTimer); err != nil {
		return fmt.Errorf("failed to modify QP to RTR: %w", err)
	}
	a = &verbs.QPAttr{State: verbs.QPSRTS, Timeout: uint8(c.o.timeout), RetryCnt: 7, RNRRetry: 7, SQPSN: myPSN, MaxRdAtomic: 1}
	if err := c.qp.Modify(a, verbs.QPAttrState|verbs.QPAttrTimeout|verbs.QPAttrRetryCnt|verbs.QPAttrRNRRetry|
		verbs.QPAttrSQPSN|verbs.QPAttrMaxQPRdAtomic); err != nil {
		return fmt.Errorf("failed to modify QP to RTS: %w", err)
	}
	return nil
}

var errNoGID = errors.New("no usable remote GID")

// postRecv is pp_post_recv: it posts up to n receives of the whole
// buffer and returns how many were posted.
func (c *ppCtx) postRecv(n int) int {
	wrs := make([]verbs.RecvWR, n)
	for i := range wrs {
		wrs[i] = verbs.RecvWR{ID: recvWRID, SG: []verbs.SGE{c.mr.SGE(0, len(c.buf))}}
	}
	k, _ := c.qp.PostRecv(wrs...)
	return k
}

// postSend is pp_post_send: one signaled SEND of the whole buffer.
func (c *ppCtx) postSend() error {
	_, err := c.qp.PostSend(verbs.SendWR{ID: sendWRID, Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
		SG: []verbs.SGE{c.mr.SGE(0, len(c.buf))}})
	return err
}

// pingpong runs rc_pingpong's main loop (the client posts the first
// SEND; each side sends its next only when its last SEND and a receive
// completed) and prints the two summary lines.
func (c *ppCtx) pingpong(ctx context.Context, routs int, stdout, stderr io.Writer) error {
	o := c.o
	isClient := o.server != ""
	if isClient {
		if o.validate {
			for i := 0; i < o.size; i += pageSize {
				c.buf[i] = 0 // rc_pingpong's i / page_size % sizeof(char)
			}
		}
		if err := c.postSend(); err != nil {
			return fmt.Errorf("couldn't post send: %w", err)
		}
	}
	c.pending = recvWRID
	if isClient {
		c.pending |= sendWRID
	}
	start := time.Now()
	var rcnt, scnt int
	var wc [2]verbs.WC
	idle := 0
	for rcnt < o.iters || scnt < o.iters {
		var ne int
		if o.events {
			cq, err := c.ch.GetCQEvent(ctx)
			if err != nil {
				return fmt.Errorf("failed to get cq_event: %w", err)
			}
			if cq != c.cq {
				return errors.New("CQ event for unknown CQ")
			}
			if err := c.cq.ReqNotify(false); err != nil {
				return fmt.Errorf("couldn't request CQ notification: %w", err)
			}
			ne = c.cq.Poll(wc[:])
		} else {
			for {
				if ne = c.cq.Poll(wc[:]); ne > 0 {
					idle = 0
					break
				}
				if err := c.cq.Err(); err != nil {
					return fmt.Errorf("poll CQ failed: %w", err)
				}
				// Busy polling as rc_pingpong does, but on a shared
				// machine yield to the kernel after a while.
				if idle++; idle > 200 {
					if err := c.dev.Wait(ctx); err != nil {
						return fmt.Errorf("poll CQ: %w", err)
					}
				}
			}
		}
		for i := 0; i < ne; i++ {
			if !c.parseWC(&wc[i], &scnt, &rcnt, &routs, stdout, stderr) {
				return errReported
			}
		}
	}
	usec := float64(time.Since(start).Microseconds())
	if usec == 0 {
		usec = 1
	}
	bytes := int64(o.size) * int64(o.iters) * 2
	fmt.Fprintf(stdout, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec/1e6, float64(bytes)*8/usec)
	fmt.Fprintf(stdout, "%d iters in %.2f seconds = %.2f usec/iter\n", o.iters, usec/1e6, usec/float64(o.iters))
	return nil
}

// errReported is returned after the message was printed as rc_pingpong
// prints it.
var errReported = errors.New("failed")

// parseWC is parse_single_wc; it reports a failure on stderr as
// rc_pingpong does and returns false.
func (c *ppCtx) parseWC(wc *verbs.WC, scnt, rcnt, routs *int, stdout, stderr io.Writer) bool {
	if wc.Status != verbs.WCSuccess {
		fmt.Fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", wc.Status, int(wc.Status), int(wc.WRID))
		return false
	}
	switch wc.WRID {
	case sendWRID:
		*scnt++
	case recvWRID:
		if *routs--; *routs <= 1 {
			*routs += c.postRecv(c.o.rxDepth - *routs)
			if *routs < c.o.rxDepth {
				fmt.Fprintf(stderr, "Couldn't post receive (%d)\n", *routs)
				return false
			}
		}
		*rcnt++
		if c.o.validate {
			for i := 0; i < c.o.size; i += pageSize {
				if c.buf[i] != 0 {
					fmt.Fprintf(stdout, "invalid data in page %d\n", i/pageSize)
				}
			}
		}
	default:
		fmt.Fprintf(stderr, "Completion for unknown wr_id %d\n", int(wc.WRID))
		return false
	}
	c.pending &^= int(wc.WRID)
	if *scnt < c.o.iters && c.pending == 0 {
		if err := c.postSend(); err != nil {
			fmt.Fprintf(stderr, "Couldn't post send: %v\n", err)
			return false
		}
		c.pending = recvWRID | sendWRID
	}
	return true
}
