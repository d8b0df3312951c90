package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"
)

// tcpOOB is the out-of-band channel of server/client mode.
type tcpOOB struct {
	c   net.Conn
	r   *bufio.Reader
	seq uint64
	// progress, if set, runs on every poll of a barrier (barrier_progress.go).
	progress func()
}

func newTCPOOB(c net.Conn) *tcpOOB { return &tcpOOB{c: c, r: bufio.NewReader(c)} }

func (t *tcpOOB) send(m *message) error { return peerGone(writeFrame(t.c, m)) }

// peerGone names an ended connection as the peer's doing.
func peerGone(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return fmt.Errorf("peer closed the connection: %w", err)
	}
	return err
}

func (t *tcpOOB) recv(want msgKind) (message, error) {
	m, err := readFrame(t.r)
	if err != nil {
		return m, peerGone(err)
	}
	if m.Kind == kindError {
		return m, fmt.Errorf("peer: %s", m.Err)
	}
	if m.Kind != want {
		return m, fmt.Errorf("%w: message kind %d, want %d", ErrFormat, m.Kind, want)
	}
	return m, nil
}

func (t *tcpOOB) exchange(mine setup) (setup, error) {
	if err := t.send(&message{Kind: kindSetup, Setup: mine}); err != nil {
		return setup{}, err
	}
	m, err := t.recv(kindSetup)
	return m.Setup, err
}

func (t *tcpOOB) barrier() error {
	t.seq++
	if err := t.send(&message{Kind: kindSync, Seq: t.seq}); err != nil {
		return err
	}
	if t.progress != nil {
		t.progress()
	}
	t.spinReadable()
	m, err := t.recv(kindSync)
	if err != nil {
		return err
	}
	if m.Seq != t.seq {
		return fmt.Errorf("%w: sync %d, want %d", ErrFormat, m.Seq, t.seq)
	}
	return nil
}

func (t *tcpOOB) Close() error { return t.c.Close() }

// serve accepts one client on ln, takes its params and runs the responder.
func serve(cfg *config, ln net.Listener) error {
	c, err := ln.Accept()
	ln.Close()
	if err != nil {
		return err
	}
	ch := newTCPOOB(c)
	defer ch.Close()
	m, err := ch.recv(kindParams)
	if err != nil {
		return fmt.Errorf("client params: %w", err)
	}
	cfg.setParams(m.Params)
	if _, err := checkRunnable(cfg); err != nil {
		_ = ch.send(&message{Kind: kindError, Err: err.Error()})
		return err
	}
	return runSide(cfg, ch, false, nil, nil)
}

// dial connects to the server, retrying a refused connection for up to
// wait, and sends the run's params.
func dial(cfg *config, host string, wait time.Duration) (*tcpOOB, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(cfg.Port))
	deadline := time.Now().Add(wait)
	for {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err == nil {
			ch := newTCPOOB(c)
			if err := ch.send(&message{Kind: kindParams, Params: cfg.params()}); err != nil {
				c.Close()
				return nil, err
			}
			return ch, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connect to %s: %w", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
