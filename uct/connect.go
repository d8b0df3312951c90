package uct

// ConnectStarter is an Iface whose connection setup can wait for the peer
// in the background. StartConnect does Connect's local part at once and
// returns; the peer's answer is taken by Connecting.Finish on the iface's
// goroutine. A caller that connects from inside its progress loop (ucp
// dialling a failed lane again) uses it so that a peer or path that does
// not answer holds up nothing but that one connection.
type ConnectStarter interface {
	StartConnect(addr []byte, params EPParams) (Connecting, error)
}

// Connecting is a connection StartConnect began. Its methods run on the
// iface's goroutine, like Connect.
type Connecting interface {
	// Finish returns ErrInProgress while the peer has not answered;
	// then, once, the endpoint or the error Connect would have
	// returned. After that, or after Cancel, it returns ErrCanceled.
	Finish() (Endpoint, error)
	// Cancel abandons the connection: its local resources are freed,
	// and a connection the peer accepts later is closed at once.
	// Cancel after Finish returned an endpoint does nothing; close the
	// endpoint instead. Idempotent.
	Cancel()
}
