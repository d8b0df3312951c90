package netns

import "net/netip"

// AddAddr adds the address p to the namespace's veth end (as
// `ip addr add` does); the kernel announces it with RTM_NEWADDR. The
// address goes with the namespace.
func (n *NS) AddAddr(p netip.Prefix) error {
	return n.Do(func() error {
		r, err := openRtnl()
		if err != nil {
			return err
		}
		defer r.Close()
		return r.addAddr(n.index, p)
	})
}
