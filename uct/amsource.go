package uct

// AMSource names the connection that delivered an active message, as the
// receiving transport knows it: for rc the QP number of the receiving
// QP, for shm the sender's iface (process id and segment fd) as the
// sender wrote it into the FIFO cell. Messages of one peer endpoint carry
// the same source for the endpoint's life; messages of different peer
// endpoints carry different sources. A source is only meaningful on the
// iface that reported it.
type AMSource uint64

// AMSourceHandler is an AMHandler that is also told the message's source.
type AMSourceHandler func(arg any, data []byte, flags AMFlags, src AMSource)

// AMSourceIface is implemented by ifaces that tell AM handlers which
// connection delivered each message, so that an upper layer can bind a
// message to the peer whose connection carried it rather than to what
// the message says about its sender.
type AMSourceIface interface {
	// SetAMSourceHandler installs h for AM id (0..MaxAMID), replacing a
	// handler installed with SetAMHandler; nil removes it.
	SetAMSourceHandler(id uint8, h AMSourceHandler, arg any) error
}

// AMSourceEndpoint is implemented by endpoints that know the source under
// which the iface they are connected to delivers its own messages to this
// endpoint's iface (shm: the peer iface). An upper layer uses it to check
// that a peer's first message came from the iface it claims.
type AMSourceEndpoint interface {
	PeerAMSource() AMSource
}
