package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ucgo/ucgo/internal/oobexch"
)

func TestExchangeLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cli := oobexch.Dest{QPN: 0x11, PSN: 0x123456, GID: oobexch.GIDFromAddr(netip.MustParseAddr("10.77.0.1"))}
	srv := oobexch.Dest{QPN: 0x12, PSN: 0xabcdef, GID: oobexch.GIDFromAddr(netip.MustParseAddr("10.77.0.2"))}
	type result struct {
		d   oobexch.Dest
		err error
	}
	sres := make(chan result, 1)
	readyCalled := false
	go func() {
		d, err := serverExchange(ctx, ln, func(rem oobexch.Dest) (oobexch.Dest, error) {
			readyCalled = rem == cli
			return srv, nil
		})
		sres <- result{d, err}
	}()
	got, err := clientExchange(ctx, ln.Addr().String(), cli)
	if err != nil {
		t.Fatal(err)
	}
	if got != srv {
		t.Fatalf("client got %v, want %v", got, srv)
	}
	r := <-sres
	if r.err != nil || r.d != cli || !readyCalled {
		t.Fatalf("server got %v, %v (ready called with client's address: %v)", r.d, r.err, readyCalled)
	}
}

// A server that writes its address in pieces and a client that sends
// garbage both give clear errors, not hangs.
func TestExchangeBadPeer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(bytes.Repeat([]byte("z"), oobexch.DestSize))
		time.Sleep(time.Second)
	}()
	_, err = serverExchange(ctx, ln, func(oobexch.Dest) (oobexch.Dest, error) { return oobexch.Dest{}, nil })
	if !errors.Is(err, oobexch.ErrFormat) {
		t.Fatalf("garbage from client: %v, want ErrFormat", err)
	}

	sctx, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	_, err = clientExchange(sctx, "127.0.0.1:1", oobexch.Dest{})
	if err == nil || !strings.Contains(err.Error(), "couldn't connect") {
		t.Fatalf("refused port: %v", err)
	}
}

func TestFlags(t *testing.T) {
	var out bytes.Buffer
	o, err := parseFlags([]string{"-s", "1", "-m", "4096", "-n", "10000", "-g", "1", "-a", "10.77.0.1", "10.77.0.2"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if o.size != 1 || o.mtu != 4096 || o.iters != 10000 || o.gidIdx != 1 || o.server != "10.77.0.2" || o.port != 18515 || o.rxDepth != 500 {
		t.Fatalf("parsed %+v", o)
	}
	if _, err := parseFlags([]string{"-m", "1500"}, &out); err == nil {
		t.Fatal("MTU 1500 accepted")
	}
}
