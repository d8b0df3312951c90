package rc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/ucgo/ucgo/uct"
)

// cmServer is an iface's connection manager: it accepts TCP connections on
// the iface's CM port, answers each REQ through accept and keeps the
// connection open as the passive QP's lifeline: a DREQ or the connection's
// end (the requester closed its endpoint or died) calls the release
// function accept returned. Close sends DREQ on every established
// connection before closing it, so the requester can tell an iface that
// closed from a process that died. It runs one goroutine for the listener
// and one per connection, on the control path only.
type cmServer struct {
	ln     *net.TCPListener
	accept func(req cmMsg) (rep cmMsg, release func(), err error)

	mu     sync.Mutex
	conns  map[*net.TCPConn]uint32 // the passive QPN once REP is sent, else 0
	closed bool
	wg     sync.WaitGroup
}

// cmHandshakeTimeout bounds how long the passive side waits for a REQ.
const cmHandshakeTimeout = 10 * time.Second

// cmByeTimeout bounds the DREQ that Close sends on each connection (the
// socket's send buffer is all but empty: only a stuck peer blocks it).
const cmByeTimeout = 100 * time.Millisecond

func listenCM(ip netip.Addr, accept func(cmMsg) (cmMsg, func(), error)) (*cmServer, error) {
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
	if err != nil {
		return nil, fmt.Errorf("rc cm: listen on %s: %w: %w", ip, uct.ErrUnreachable, err)
	}
	s := &cmServer{ln: ln, accept: accept, conns: map[*net.TCPConn]uint32{}}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Port returns the TCP port the server listens on.
func (s *cmServer) Port() uint16 { return uint16(s.ln.Addr().(*net.TCPAddr).Port) }

func (s *cmServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptTCP()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = 0
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handle(c)
	}
}

func (s *cmServer) handle(c *net.TCPConn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	c.SetDeadline(time.Now().Add(cmHandshakeTimeout))
	req, err := readCM(c)
	if err != nil || req.Type != cmREQ {
		if err == nil {
			c.Write((&cmMsg{Type: cmREJ, Reason: rejBadRequest}).encode())
		}
		return
	}
	rep, release, err := s.accept(req)
	if err != nil {
		reason := uint8(rejNoResource)
		switch {
		case errors.Is(err, uct.ErrInvalidAddress):
			reason = rejStaleNonce
		case errors.Is(err, uct.ErrInvalidParam):
			reason = rejBadRequest
		case errors.Is(err, uct.ErrClosed):
			reason = rejClosed
		}
		c.Write((&cmMsg{Type: cmREJ, Reason: reason}).encode())
		return
	}
	defer release()
	// The QPN is recorded and REP written under s.mu: a DREQ or DOWN that
	// Close or down sends then always follows the REP the requester reads.
	s.mu.Lock()
	if _, ok := s.conns[c]; ok {
		s.conns[c] = rep.QPN
	}
	_, err = c.Write(rep.encode())
	s.mu.Unlock()
	if err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	c.SetKeepAlive(true)
	c.SetKeepAlivePeriod(time.Second)
	for {
		m, err := readCM(c)
		if err != nil || m.Type == cmDREQ || m.Type == cmDOWN {
			return
		}
	}
}

// Close stops accepting, sends DREQ on every established connection and
// closes it (their passive QPs are released) and waits for the goroutines.
func (s *cmServer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	err := s.ln.Close()
	for c, qpn := range s.conns {
		if qpn != 0 {
			// the requester's lifeline: "this iface closed"
			c.SetWriteDeadline(time.Now().Add(cmByeTimeout))
			c.Write((&cmMsg{Type: cmDREQ, QPN: qpn}).encode())
		}
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// cmDial connects to a peer's CM port, sends req and waits for the answer,
// all within timeout. On REP it returns the connection, which the caller
// keeps open for the endpoint's lifetime.
func cmDial(ctx context.Context, peer netip.AddrPort, req cmMsg, timeout time.Duration) (*net.TCPConn, cmMsg, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", peer.String())
	if err != nil {
		st := uct.ErrUnreachable
		if ctx.Err() != nil {
			st = uct.ErrTimedOut
		}
		return nil, cmMsg{}, fmt.Errorf("rc cm: dial %s: %w: %w", peer, st, err)
	}
	return cmExchange(ctx, nc.(*net.TCPConn), peer, req)
}

// cmExchange sends req on c, a connection to peer's CM port (connected,
// or still connecting), and reads the answer, within ctx. On REP it
// returns c; otherwise it closes c.
func cmExchange(ctx context.Context, c *net.TCPConn, peer netip.AddrPort, req cmMsg) (*net.TCPConn, cmMsg, error) {
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	// a canceled ctx ends the wait at once
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	status := func(err error) error {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return uct.ErrTimedOut
		}
		return uct.ErrUnreachable
	}
	if _, err := c.Write(req.encode()); err != nil {
		c.Close()
		return nil, cmMsg{}, fmt.Errorf("rc cm: send REQ to %s: %w: %w", peer, status(err), err)
	}
	rep, err := readCM(c)
	if err != nil {
		c.Close()
		return nil, cmMsg{}, fmt.Errorf("rc cm: read REP from %s: %w: %w", peer, status(err), err)
	}
	switch rep.Type {
	case cmREP:
	case cmREJ:
		c.Close()
		st := uct.ErrUnreachable
		switch rep.Reason {
		case rejStaleNonce:
			st = uct.ErrInvalidAddress
		case rejNoResource:
			st = uct.ErrNoResource
		}
		return nil, cmMsg{}, fmt.Errorf("rc cm: %s rejected the connection (reason %d): %w", peer, rep.Reason, st)
	default:
		c.Close()
		return nil, cmMsg{}, fmt.Errorf("rc cm: %s answered with message type %d: %w", peer, rep.Type, uct.ErrUnreachable)
	}
	if !stop() {
		// ctx ended as the answer came: the caller gave up waiting
		c.Close()
		return nil, cmMsg{}, fmt.Errorf("rc cm: %s answered after the wait ended: %w", peer, uct.ErrTimedOut)
	}
	c.SetDeadline(time.Time{})
	c.SetKeepAlive(true)
	c.SetKeepAlivePeriod(time.Second)
	return c, rep, nil
}
