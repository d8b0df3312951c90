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

// AMOriginIface is implemented by source-reporting ifaces that can name
// the peer iface a source belongs to (its origin); AMOriginEndpoint by
// their endpoints, which name the origin of the iface they connect to in
// the same terms. An upper layer compares the two to check that a
// message came from the iface an endpoint is connected to, also when the
// peer has opened a new connection (a new source) since.
type AMOriginIface interface {
	// AMSourceOrigin returns the origin of src; false if src is unknown.
	AMSourceOrigin(src AMSource) (origin uint64, ok bool)
}

// AMOriginEndpoint: see AMOriginIface.
type AMOriginEndpoint interface {
	PeerOrigin() uint64
}
