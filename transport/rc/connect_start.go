package rc

import (
	"context"
	"fmt"
	"net"
	"net/netip"

	"github.com/ucgo/ucgo/uct"
)

// StartConnect begins a connection to the iface at addr (uct.ConnectStarter):
// it creates the QP and starts the connection manager's dial here (in the
// caller's network namespace), and leaves the wait for the connection and
// the peer's answer to a goroutine of its own, so the caller's progress
// loop goes on. Connecting.Finish brings the QP to RTS and makes
// the endpoint, on the iface goroutine.
func (it *Iface) StartConnect(addr []byte, params uct.EPParams) (uct.Connecting, error) {
	d, err := it.prepareConnect(addr, params)
	if err != nil {
		return nil, err
	}
	peer := netip.AddrPortFrom(d.a.IP, d.a.CMPort)
	nc, err := cmStartDial(peer)
	if err != nil {
		d.qp.Close()
		return nil, uct.NewOpError(transportName, "connect", d.peer, uct.ErrUnreachable, fmt.Errorf("rc cm: %w", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	c := &connecting{it: it, d: d, cancel: cancel, done: make(chan struct{})}
	if it.dialing == nil {
		it.dialing = map[*connecting]bool{}
	}
	it.dialing[c] = true
	go func() {
		defer close(c.done)
		c.conn, c.rep, c.err = cmExchange(ctx, nc, peer, d.req)
	}()
	return c, nil
}

// connecting is a connection StartConnect began; the iface keeps it in
// dialing until it is finished or canceled, and Close cancels it. The dialling goroutine
// writes conn, rep and err, then closes done; the iface goroutine reads
// them only after done.
type connecting struct {
	it     *Iface
	d      *dial
	cancel context.CancelFunc
	done   chan struct{}
	over   bool // Finish returned its result, or Cancel ran

	conn *net.TCPConn
	rep  cmMsg
	err  error
}

func (c *connecting) Finish() (uct.Endpoint, error) {
	if c.over {
		return nil, uct.NewOpError(transportName, "connect", c.d.peer, uct.ErrCanceled, nil)
	}
	select {
	case <-c.done:
	default:
		return nil, uct.ErrInProgress
	}
	c.over = true
	c.cancel()
	delete(c.it.dialing, c)
	return c.it.finishConnect(c.d, c.conn, c.rep, c.err)
}

func (c *connecting) Cancel() {
	if c.over {
		return
	}
	c.over = true
	c.cancel()
	delete(c.it.dialing, c)
	c.d.qp.Close()
	// The exchange ends at once (its deadline is now); close the
	// connection it may have made.
	go func() {
		<-c.done
		if c.conn != nil {
			c.conn.Close()
		}
	}()
}
