package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
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

func init() {
	if addr := os.Getenv(perftestChildEnv); addr != "" {
		if err := perftestWriteBWClient(addr, os.Getenv("RXEVM_HOST_IP")); err != nil {
			fmt.Fprintln(os.Stderr, "perftest client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}
