// Package uct is the transport contract of ucgo: status codes and their
// remedies, memory domains, ifaces, endpoints, completions, progress and
// waiting, and the three doors for errors that belong to no operation
// (error handler, async event queue, device status watchers).
//
// A transport (transport/shm, transport/rc) implements Component, MD, Iface
// and Endpoint, with the helpers of uct/uctkit. uct imports no transport.
// Every endpoint operation returns its own status: nil (done),
// ErrInProgress (its Completion will be invoked), ErrNoResource
// (back-pressure: retry or PendingAdd), or an *OpError naming the
// operation and the peer and wrapping a Status, matched with errors.Is.
// Status.Remedy tells what to do next.
//
// Ownership: an Iface owns its endpoints, its event queue and its device
// watchers; closing it closes them. Progress, AM handlers, completions and
// pending dispatch run on the goroutine that calls Progress. Error
// handlers and device watchers may run on a transport's background
// goroutine.
package uct
