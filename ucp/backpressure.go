package ucp

import "github.com/ucgo/ucgo/uct"

// noResource reports whether err is back-pressure, uct.ErrNoResource as
// a transport returns it (unwrapped). It is err == uct.ErrNoResource
// without the interface comparison's call into the runtime (ifaceeq),
// which a sender whose ring is full pays on every retry: a type
// assertion to uct.Status and an integer compare, inlined.
func noResource(err error) bool {
	s, ok := err.(uct.Status)
	return ok && s == uct.ErrNoResource
}
