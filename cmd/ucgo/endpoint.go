package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/shm"
	"github.com/ucgo/ucgo/ucp"
)

// describe prints a decoded worker address.
func describe(out io.Writer, prefix string, b []byte) error {
	a, err := ucp.UnpackAddress(b)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%suuid %016x host %s\n", prefix, a.UUID, a.Host)
	for _, ia := range a.Ifaces {
		var what string
		switch ia.Transport {
		case "rc":
			if ra, err := rc.DecodeAddress(ia.Addr); err == nil {
				what = fmt.Sprintf("RoCEv2 %v udp port %d, connection manager port %d", ra.IP, ra.UDPPort, ra.CMPort)
			} else {
				what = err.Error()
			}
		case "shm":
			if sa, err := shm.DecodeAddress(ia.Addr); err == nil {
				what = fmt.Sprintf("pid %d segment fd %d", sa.PID, sa.FD)
			} else {
				what = err.Error()
			}
		default:
			what = fmt.Sprintf("%d B", len(ia.Addr))
		}
		fmt.Fprintf(out, "%s  %s: %s\n", prefix, ia.Transport, what)
	}
	return nil
}

// printEndpoint opens a worker (configured by the environment), prints its
// address and, if peer is set, the lanes towards that address.
func printEndpoint(out io.Writer, peer string) error {
	var peerAddr []byte
	if peer != "" {
		text := peer
		if name, ok := strings.CutPrefix(peer, "@"); ok {
			b, err := os.ReadFile(name)
			if err != nil {
				return err
			}
			text = string(b)
		}
		b, err := hex.DecodeString(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("peer address is not hex: %w", err)
		}
		peerAddr = b
	}
	uc, err := ucp.NewContext(ucp.Config{})
	if err != nil {
		return err
	}
	defer uc.Close()
	w, err := uc.NewWorker()
	if err != nil {
		return err
	}
	defer w.Close()
	fmt.Fprintf(out, "# worker address: %x\n", w.Address())
	if err := describe(out, "#   ", w.Address()); err != nil {
		return err
	}
	if peerAddr == nil {
		return nil
	}
	fmt.Fprintln(out, "# peer address:")
	if err := describe(out, "#   ", peerAddr); err != nil {
		return fmt.Errorf("peer address: %w", err)
	}
	lanes, err := w.LanesTo(peerAddr)
	if err != nil {
		return err
	}
	if len(lanes) == 0 {
		fmt.Fprintln(out, "# lanes: none: the two workers have no transport in common (compare UCGO_TLS on both sides)")
		return nil
	}
	fmt.Fprintln(out, "# lanes:")
	for i, l := range lanes {
		role := "am, tag, rma"
		switch {
		case l.Fallback:
			role = "fallback when no shared-memory lane connects"
		case l.Standby:
			role = "standby: carries traffic when no shared-memory lane is healthy (failover)"
		case l.Alternative:
			role = "tried if the lanes before it do not connect"
		}
		fmt.Fprintf(out, "#   %d: %s/%s (%s), am bcopy %s, put zcopy %s\n", i, l.Transport, l.Device, role, size(l.Attr.AMMaxBcopy), size(l.Attr.PutMaxZcopy))
	}
	return nil
}
