package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/ucgo/ucgo/internal/oobexch"
)

// perftestChildEnv selects the perftest handshake child role of this test
// binary: its value is the server's host:port.
const perftestChildEnv = "UCGO_PERFTEST_WRITE_BW_CLIENT"

// perftestWriteBWClient plays an ib_write_bw client's TCP side (no QP: the
// advertised QPN 0x55 is never used since a write_bw server is passive)
// through the whole run: versions, system data, MTU, keys twice, the
// post-RTR barrier, the end barrier, the bandwidth report and the close.
func perftestWriteBWClient(addr, localIP string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var conn net.Conn
	for {
		var err error
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", addr)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(50 * time.Second))
	s := &oobexch.PerftestSession{RW: conn, Client: true}
	if err := s.ExchangeVersions("5.70"); err != nil {
		return err
	}
	fmt.Printf("perftest peer version %q\n", s.RemoteVersion)
	if _, _, err := s.SysData(4096, 64); err != nil {
		return err
	}
	mtu, err := s.MTU(3)
	if err != nil {
		return err
	}
	fmt.Printf("perftest MTU enum %d\n", mtu)
	key := oobexch.PerftestKey{OutReads: 1, QPN: 0x55, PSN: 0x424242, RKey: 0xabcd, VAddr: 0x7f1234560000,
		GID: oobexch.GIDFromAddr(netip.MustParseAddr(localIP))}
	for _, step := range []string{"keys", "keys again", "post-RTR barrier", "end barrier"} {
		rem, err := s.HandShake(key)
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		fmt.Printf("perftest %s: remote %v\n", step, rem)
	}
	if _, err := s.ExchangeBWReports(oobexch.BWReport{Size: 65536, Iters: 5000, BWPeak: 1234.5, BWAvg: 1234.5, MsgRateAvg: 0.019753}); err != nil {
		return err
	}
	if err := s.Close(key); err != nil {
		return err
	}
	fmt.Println("PERFTEST-CLIENT-OK")
	return nil
}

// perftestServerChildEnv selects the perftest server child role: its value
// is the TCP port to listen on.
const perftestServerChildEnv = "UCGO_PERFTEST_WRITE_BW_SERVER"

// perftestWriteBWServer plays an ib_write_bw server's TCP side up to the
// post-RTR barrier, advertising QPN 0x66 (no QP behind it), then returns.
func perftestWriteBWServer(port, localIP string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(localIP, port))
	if err != nil {
		return err
	}
	defer ln.Close()
	ln.(*net.TCPListener).SetDeadline(time.Now().Add(50 * time.Second))
	conn, err := ln.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(50 * time.Second))
	s := &oobexch.PerftestSession{RW: conn}
	var log strings.Builder
	if err := s.ExchangeVersions("5.70"); err != nil {
		return err
	}
	fmt.Fprintf(&log, "perftest server: peer version %q\n", s.RemoteVersion)
	if _, _, err := s.SysData(4096, 64); err != nil {
		return err
	}
	if _, err := s.MTU(3); err != nil {
		return err
	}
	key := oobexch.PerftestKey{OutReads: 1, QPN: 0x66, PSN: 0x171717, RKey: 0xbeef, VAddr: 0x7f0000aa0000,
		GID: oobexch.GIDFromAddr(netip.MustParseAddr(localIP))}
	for _, step := range []string{"keys", "keys again", "post-RTR barrier"} {
		rem, err := s.HandShake(key)
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		fmt.Fprintf(&log, "perftest server %s: remote %v\n", step, rem)
	}
	fmt.Print(log.String())
	fmt.Println("PERFTEST-SERVER-OK")
	return nil
}

func init() {
	if port := os.Getenv(perftestServerChildEnv); port != "" {
		if err := perftestWriteBWServer(port, os.Getenv("RXEVM_HOST_IP")); err != nil {
			fmt.Fprintln(os.Stderr, "perftest server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if addr := os.Getenv(perftestChildEnv); addr != "" {
		if err := perftestWriteBWClient(addr, os.Getenv("RXEVM_HOST_IP")); err != nil {
			fmt.Fprintln(os.Stderr, "perftest client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}
