package ucp

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/ucgo/ucgo/transport/rc"
	"github.com/ucgo/ucgo/uct"
)

// Network devices. Config.NetDevices (UCGO_NET_DEVICES, like UCX's
// UCX_NET_DEVICES) names the netdevs the rc transport runs on: one rc
// component, memory domain and, per worker, iface for each, so a worker
// publishes one rc iface address per netdev and an endpoint connects one
// rc lane per reachable pair of devices (a rail). "all" picks every netdev
// that is up, not loopback and has an IPv4 address.

// EnvNetDevices sets Config.NetDevices: a comma list of netdevs, or "all".
const EnvNetDevices = "UCGO_NET_DEVICES"

// netDevicesAll is the NetDevices value that picks every usable netdev.
const netDevicesAll = "all"

// parseNetDevices splits a UCGO_NET_DEVICES value.
func parseNetDevices(v string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		if len(n) >= 16 || strings.ContainsAny(n, "/ \t") {
			return nil, fmt.Errorf("%q is no netdev name", n)
		}
		seen[n] = true
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no netdev named")
	}
	if seen[netDevicesAll] && len(out) > 1 {
		return nil, fmt.Errorf("%q with other names", netDevicesAll)
	}
	return out, nil
}

// usableNetdevs lists the netdevs that are up, not loopback and have an
// IPv4 address, in index order.
func usableNetdevs() []string {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []string
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		if _, ok := ifaceIPv4(ifc.Name); ok {
			out = append(out, ifc.Name)
		}
	}
	return out
}

// ifaceIPv4 returns the first IPv4 prefix of netdev name.
func ifaceIPv4(name string) (netip.Prefix, bool) {
	ps := ifacePrefixes(name)
	if len(ps) == 0 {
		return netip.Prefix{}, false
	}
	return ps[0], true
}

// ifacePrefixes returns the IPv4 prefixes of netdev name.
func ifacePrefixes(name string) []netip.Prefix {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil
	}
	as, err := ifc.Addrs()
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range as {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil {
			continue
		}
		ip, _ := netip.AddrFromSlice(ipn.IP.To4())
		ones, _ := ipn.Mask.Size()
		if ones == 0 && len(ipn.Mask) == 16 {
			ones, _ = ipn.Mask[12:].Size() // a v4 mask in 16 bytes
		}
		out = append(out, netip.PrefixFrom(ip, ones))
	}
	return out
}

// resolveNetDevices returns the netdevs cfg.NetDevices names ("all"
// expanded). A named netdev that does not exist is an error wrapping
// uct.ErrInvalidParam.
func resolveNetDevices(devs []string) ([]string, error) {
	if len(devs) == 1 && devs[0] == netDevicesAll {
		return usableNetdevs(), nil
	}
	for _, d := range devs {
		if _, err := net.InterfaceByName(d); err != nil {
			return nil, fmt.Errorf("ucp: %s: netdev %q: %w: %w", EnvNetDevices, d, uct.ErrInvalidParam, err)
		}
	}
	return devs, nil
}

// withNetDevices replaces the rc components of ts (nil: the default
// transports, shm first) by one rc component per netdev of devs. With
// "all" and no usable netdev, rc is left out, as DefaultTransports does.
func withNetDevices(ts []uct.Component, devs []string) ([]uct.Component, error) {
	names, err := resolveNetDevices(devs)
	if err != nil {
		return nil, err
	}
	rcs := make([]uct.Component, 0, len(names))
	for _, d := range names {
		rcs = append(rcs, rc.New(rc.Config{Device: d}))
	}
	if ts == nil {
		ts = builtinTransports()
	}
	var out []uct.Component
	placed := false
	for _, c := range ts {
		if c.Name() != "rc" {
			out = append(out, c)
			continue
		}
		if !placed {
			out = append(out, rcs...)
			placed = true
		}
	}
	return out, nil
}

// ifaceSubnets returns the IPv4 subnets of the netdev an rc iface runs
// on (the prefixes holding the address it publishes), read when the
// worker opens it, in the network namespace it lives in. Other
// transports have none.
func ifaceSubnets(wi *wiface) []netip.Prefix {
	if wi.md.comp.Name() != "rc" {
		return nil
	}
	a, err := rc.DecodeAddress(wi.it.Address())
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, p := range ifacePrefixes(wi.attr.Device) {
		if p.Masked().Contains(a.IP) {
			out = append(out, p.Masked())
		}
	}
	return out
}

// reach says whether our iface wi reaches a peer iface: the peer's
// address lies in one of wi's subnets (yes), outside all of them (no), or
// wi's subnets or the peer's address are not known (unknown).
type reach int

const (
	reachUnknown reach = iota
	reachYes
	reachNo
)

func (wi *wiface) reaches(ia IfaceAddress) reach {
	if len(wi.subnets) == 0 || ia.Transport != "rc" {
		return reachUnknown
	}
	a, err := rc.DecodeAddress(ia.Addr)
	if err != nil {
		return reachNo
	}
	for _, p := range wi.subnets {
		if p.Contains(a.IP) {
			return reachYes
		}
	}
	return reachNo
}
