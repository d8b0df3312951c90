package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ucgo/ucgo/internal/netns"
	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/transport/rc/verbs"
	"github.com/ucgo/ucgo/uct"
)

// noNetnsEnv, when set to 1, makes -l -x rc run over loopback even as root.
const noNetnsEnv = "UCGO_PERFTEST_NO_NETNS"

// openRC opens the rc transport on -d (default: the first up
// non-loopback netdev with IPv4, else lo). Each process binds a UDP port
// the kernel picks, which its iface address carries, so several processes
// can share a host's address. (Sharing port 4791 through the reuseport
// group loses put_lat's packets between two namespaces: retry exceeded.)
func openRC(cfg *config) (uct.Component, error) {
	return rc.New(rc.Config{Device: cfg.Device, Port: -1}), nil
}

// localRC places the two sides of -l: as root, in two network namespaces
// joined by a veth pair (the server in B, the client in A); else, or with
// UCGO_PERFTEST_NO_NETNS=1, both on lo.
func localRC(cfg *config) (localPlan, error) {
	loop := localPlan{ListenHost: "127.0.0.1", Device: "lo", Where: "on lo"}
	if os.Getenv(noNetnsEnv) == "1" {
		return loop, nil
	}
	pair, err := netns.New()
	switch {
	case errors.Is(err, netns.ErrNotRoot):
		loop.Note = "not root: rc runs over lo, not between two network namespaces"
		return loop, nil
	case err != nil:
		loop.Note = fmt.Sprintf("rc runs over lo: cannot build network namespaces: %v", err)
		return loop, nil
	}
	for _, ns := range []*netns.NS{pair.A, pair.B} {
		if err := ns.Do(func() error { return waitPortActive(10 * time.Second) }); err != nil {
			return localPlan{}, errors.Join(fmt.Errorf("network namespace %s: %w", ns.Name(), err), pair.Close())
		}
	}
	return localPlan{
		Server:     pair.B.Command,
		Client:     pair.A.Do,
		ListenHost: pair.B.Addr().String(),
		Where:      "between two network namespaces",
		Cleanup:    pair.Close,
	}, nil
}

// waitPortActive waits until the rc device of this network namespace has
// an active port: a fresh veth's carrier comes up a little after the link
// is set up, and connecting before fails with uct.ErrLocalNICFailed.
func waitPortActive(timeout time.Duration) error {
	md, err := rc.New(rc.Config{Port: -1}).OpenMD(uct.MDParams{})
	if err != nil {
		return err
	}
	defer md.Close()
	dev := md.(*rc.MD).Device()
	for deadline := time.Now().Add(timeout); dev.QueryPort().State != verbs.PortActive; {
		if time.Now().After(deadline) {
			return fmt.Errorf("port of %s not active after %v", dev.Name(), timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
