package uct

// FDWaiter is an iface whose Wait sleeps in poll(2) on file descriptors.
// A caller that sleeps until any of several ifaces has an event (a ucp
// worker whose traffic runs over several) polls all their descriptors at
// once, rather than calling each iface's Wait in turn, in which an event
// on one iface waits until the wait on another has ended.
type FDWaiter interface {
	// WaitFDs does what Wait does before it sleeps and appends the
	// descriptors that Wait would poll for reading to fds. The iface
	// must be armed (Arm) as for Wait; Wake makes one of the
	// descriptors readable.
	WaitFDs(fds []int) []int
	// WaitDone does what Wait does once the poll has returned.
	WaitDone()
}
