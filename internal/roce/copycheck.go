package roce

import (
	"fmt"
	"net/netip"
)

// CopyCheck verifies the ICRC of a received packet while its payload is
// copied out, so that the payload is read once for both instead of once
// by [CheckICRC] and again by the copy. Start covers the pseudo-header
// and the packet's headers, each Copy copies the next bytes of the
// payload to where the caller places them and covers them, and Check
// covers the rest and compares.
//
// The copy happens before the ICRC is known: a caller that uses it must
// copy only into memory that a corrupt packet may spoil, because a good
// one will overwrite it (the part of a transfer still in flight at the
// position the checked-before state of the receiver says), and act on
// the packet only after Check returns nil.
//
// The zero value is ready for Start; a CopyCheck holds udp until the
// next Start.
type CopyCheck struct {
	udp  []byte
	src  netip.AddrPort
	c    uint32 // CRC of what is covered, in crc32.Update's convention
	next int    // offset in udp of the first byte not covered
	// pc keeps the pseudo-header of the last pair of endpoints: the
	// packets of a transfer all come from one peer.
	pc ICRCCache
}

// Start begins the check of udp, a received UDP payload from src to dst
// (as a UDP socket reports them) whose first hdrLen bytes are its BTH
// and extension headers, guessing IPv4 ID id as [CheckICRCID] does. It
// returns an error matching [ErrBadICRC] (and
// [ErrMalformed] for a bad length) where [CheckICRC] would reject the
// payload for its length or addresses, or hdrLen leaves no room for the
// ICRC.
func (k *CopyCheck) Start(udp []byte, hdrLen int, src, dst netip.AddrPort, id uint16) error {
	n := len(udp)
	if n < BTHLen+ICRCLen || n > maxUDPLen {
		return fmt.Errorf("%w: %w: %d-byte UDP payload", ErrBadICRC, ErrMalformed, n)
	}
	if hdrLen < BTHLen || hdrLen > n-ICRCLen {
		return fmt.Errorf("%w: %w: %d header bytes in a %d-byte UDP payload", ErrBadICRC, ErrMalformed, hdrLen, n)
	}
	if !k.pc.sameFamily(src, dst) {
		return fmt.Errorf("%w: addresses %v -> %v not both IPv4 or both IPv6", ErrBadICRC, src, dst)
	}
	c := k.pc.prefix(udp, n, src, dst, id, true)
	c = crcUpdate(c, udp[BTHLen:hdrLen])
	k.udp, k.src, k.c, k.next = udp, src, c, hdrLen
	return nil
}

// Copy copies the next len(to) bytes of the packet after what Start and
// earlier Copy calls covered into to, and covers them. It panics if they
// reach into the ICRC field.
func (k *CopyCheck) Copy(to []byte) {
	end := k.next + len(to)
	if end > len(k.udp)-ICRCLen {
		panic(fmt.Sprintf("roce: CopyCheck.Copy of %d bytes at %d of a %d-byte UDP payload", len(to), k.next, len(k.udp)))
	}
	k.c = crcCopyUpdate(k.c, to, k.udp[k.next:end])
	k.next = end
}

// Check covers the bytes after the last copy up to the ICRC field (the
// pad, or a payload tail not copied) and returns nil if the ICRC is
// consistent, an error matching [ErrBadICRC] otherwise, with the same
// tolerance of the IPv4 ID and DF flag as [CheckICRC], whatever ID
// Start guessed.
func (k *CopyCheck) Check() error {
	n := len(k.udp)
	c := crcUpdate(k.c, k.udp[k.next:n-ICRCLen])
	return matchICRC(k.udp, k.src, c)
}
