package verbs

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// UDP GRO on receive: with the UDP_GRO socket option the kernel hands a
// run of equal-size datagrams of one flow to the socket as one coalesced
// datagram, and says the segment size in a UDP_GRO control message. Over
// lo and veth a GSO message of the peer arrives that way whole, instead
// of being cut into one socket buffer per packet; one recvmmsg entry then
// carries up to 64 RoCEv2 packets. The engine cuts it back into packets
// (groNext) and handles each as if it had come alone.
//
// GRO is enabled only on a socket the device does not share: the kernel
// coalesces by 4-tuple, and on a shared port 4791 the packets of one
// peer socket may be for QPs of different processes, while a coalesced
// datagram goes whole to the process its first packet is steered to.

// groMaxLen is the largest coalesced datagram: GRO stops at 64 KiB.
const groMaxLen = 1 << 16

// groCtrlLen is the control buffer of one receive: a UDP_GRO message
// carries an int.
var groCtrlLen = unix.CmsgSpace(4)

// enableGRO turns UDP GRO on for fd and reports whether the kernel
// accepted it.
func enableGRO(fd int) bool {
	return unix.SetsockoptInt(fd, unix.SOL_UDP, unix.UDP_GRO, 1) == nil
}

// errBadCmsg is the error of a control message buffer that does not
// parse.
var errBadCmsg = errors.New("verbs: malformed control message")

// groSegSize returns the segment size of the UDP_GRO control message in
// ctrl, the control data of one received datagram; 0 if there is none
// (the datagram is a single packet).
func groSegSize(ctrl []byte) (int, error) {
	const hdr = unix.SizeofCmsghdr
	for len(ctrl) > 0 {
		if len(ctrl) < hdr {
			return 0, fmt.Errorf("%w: %d bytes left, header needs %d", errBadCmsg, len(ctrl), hdr)
		}
		// struct cmsghdr: a size_t length, then int level and int type.
		var l uint64
		if hdr == 16 {
			l = binary.NativeEndian.Uint64(ctrl)
		} else {
			l = uint64(binary.NativeEndian.Uint32(ctrl))
		}
		level := int32(binary.NativeEndian.Uint32(ctrl[hdr-8:]))
		typ := int32(binary.NativeEndian.Uint32(ctrl[hdr-4:]))
		if l < hdr || l > uint64(len(ctrl)) {
			return 0, fmt.Errorf("%w: length %d of %d bytes", errBadCmsg, l, len(ctrl))
		}
		if level == unix.SOL_UDP && typ == unix.UDP_GRO {
			if l < uint64(unix.CmsgLen(4)) {
				return 0, fmt.Errorf("%w: UDP_GRO with %d data bytes", errBadCmsg, l-uint64(unix.CmsgLen(0)))
			}
			seg := int32(binary.NativeEndian.Uint32(ctrl[unix.CmsgLen(0):]))
			if seg <= 0 || seg > groMaxLen {
				return 0, fmt.Errorf("%w: UDP_GRO segment size %d", errBadCmsg, seg)
			}
			return int(seg), nil
		}
		next := unix.CmsgSpace(int(l) - unix.CmsgLen(0))
		if next >= len(ctrl) {
			break
		}
		ctrl = ctrl[next:]
	}
	return 0, nil
}

// groNext cuts the first packet off a coalesced datagram b of seg-byte
// segments (the last one may be shorter) and returns it and the rest.
// With seg 0 b is one packet.
func groNext(b []byte, seg int) (pkt, rest []byte) {
	if seg <= 0 || seg >= len(b) {
		return b, nil
	}
	return b[:seg:seg], b[seg:]
}
