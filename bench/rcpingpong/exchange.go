package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/ucgo/ucgo/internal/oobexch"
)

// clientExchange connects to addr (retrying refused connections until ctx
// ends), sends local, reads the server's address and answers "done", as
// ibv_rc_pingpong's pp_client_exch_dest does.
func clientExchange(ctx context.Context, addr string, local oobexch.Dest) (oobexch.Dest, error) {
	var d net.Dialer
	var conn net.Conn
	for {
		var err error
		conn, err = d.DialContext(ctx, "tcp", addr)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil {
			return oobexch.Dest{}, fmt.Errorf("couldn't connect to %s: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return oobexch.Dest{}, fmt.Errorf("couldn't connect to %s: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	msg, err := local.MarshalBinary()
	if err != nil {
		return oobexch.Dest{}, err
	}
	if _, err := conn.Write(msg); err != nil { // one write: the peer does one read
		return oobexch.Dest{}, fmt.Errorf("couldn't send local address: %w", err)
	}
	buf := make([]byte, oobexch.DestSize)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return oobexch.Dest{}, fmt.Errorf("couldn't read remote address: %w", err)
	}
	rem, err := oobexch.ParseDest(buf)
	if err != nil {
		return oobexch.Dest{}, err
	}
	if _, err := conn.Write(oobexch.DoneMsg); err != nil {
		return oobexch.Dest{}, fmt.Errorf("couldn't send \"done\": %w", err)
	}
	return rem, nil
}

// serverExchange accepts one connection on ln and closes ln, reads the
// client's address, calls ready (which must bring the local QP to RTS and
// return the local address), answers, and waits for the client's "done",
// as ibv_rc_pingpong's pp_server_exch_dest does.
func serverExchange(ctx context.Context, ln net.Listener, ready func(remote oobexch.Dest) (oobexch.Dest, error)) (oobexch.Dest, error) {
	stopLn := context.AfterFunc(ctx, func() { ln.Close() })
	conn, err := ln.Accept()
	stopLn()
	ln.Close()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		return oobexch.Dest{}, fmt.Errorf("accept: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	buf := make([]byte, oobexch.DestSize)
	if _, err := io.ReadFull(conn, buf); err != nil {
		return oobexch.Dest{}, fmt.Errorf("couldn't read remote address: %w", err)
	}
	rem, err := oobexch.ParseDest(buf)
	if err != nil {
		return oobexch.Dest{}, err
	}
	local, err := ready(rem)
	if err != nil {
		return rem, fmt.Errorf("couldn't connect to remote QP: %w", err)
	}
	msg, err := local.MarshalBinary()
	if err != nil {
		return rem, err
	}
	if _, err := conn.Write(msg); err != nil {
		return rem, fmt.Errorf("couldn't send local address: %w", err)
	}
	done := make([]byte, len(oobexch.DoneMsg))
	if _, err := io.ReadFull(conn, done); err != nil {
		return rem, fmt.Errorf("couldn't read \"done\": %w", err)
	}
	if !oobexch.IsDone(done) {
		return rem, fmt.Errorf("%w: expected \"done\\0\", got %q", oobexch.ErrFormat, done)
	}
	return rem, nil
}
