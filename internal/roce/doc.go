// Package roce is the RoCEv2 wire format: InfiniBand Reliable Connection
// packets carried in UDP datagrams to port 4791, built and parsed in user
// space. The software RoCEv2 provider of transport/rc/verbs uses it to
// talk to its peers, including the Linux kernel's rxe driver.
//
// A packet is the UDP payload: the base transport header ([BTH]), the
// extension headers its [Opcode] calls for ([RETH], [AETH], [AtomicETH],
// the atomic ACK value, immediate data, the invalidate R_Key), the
// payload, 0-3 pad bytes to a multiple of 4, and the 4-byte invariant
// CRC (ICRC). [Append] encodes a [Packet] into a caller's buffer and
// [Decode] parses one without copying the payload; neither allocates.
// [AppendHeader] and [AppendTrailer] produce the same bytes in three
// pieces (headers, the caller's payload, pad+ICRC) for a sendmsg with an
// iovec each, so the payload is never copied. The IP and UDP headers are
// the kernel's business: send the bytes with an ordinary UDP socket.
//
// # ICRC
//
// The ICRC is a CRC-32 over a masked pseudo-header (IP and UDP headers
// with the fields routers change set to all ones, see [ICRC]) and the
// whole IB packet. It covers the IP addresses and UDP ports, so [Append]
// and [CheckICRC] need both ends' addresses. For IPv4 it also covers the
// IP identification and the DF flag, which a UDP socket neither controls
// nor sees:
//
//   - Sending: Append computes the ICRC for IP ID 0 and DF set, which is
//     what Linux puts on the wire for an unconnected UDP socket with
//     IP_PMTUDISC_DO (the socket the verbs provider must use).
//   - Receiving: rxe sends varying IP IDs, so [CheckICRC] accepts a
//     packet if some IP ID, with DF set or clear, makes the ICRC
//     consistent. It solves for the ID with precomputed linear maps
//     instead of trying candidates. That check has 15 bits of strength
//     instead of 32: a random corruption passes with probability 2^-15,
//     and of all single-bit errors in a 4 KiB packet one or two
//     positions pass (the tests measure this). IPv6 has no IP ID and is
//     checked in full. The BTH reserved byte is not covered by the ICRC
//     at all, by definition.
//
// A receiver that can guess the IP ID (the k-th segment of a UDP GSO
// send carries ID k) names it to [CheckICRCID], which then skips solving
// for it when the guess is right.
//
// The CRC over a payload of 512 bytes or more folds eight 16-byte lanes
// per step with 256-bit VPCLMULQDQ where the CPU has it (crcfold_amd64.s;
// twice the lanes hash/crc32 uses without AVX-512, about twice as fast),
// and goes through hash/crc32 otherwise. On an AMD EPYC (Zen 3) a
// VPCLMULQDQ issues every other cycle, ymm and xmm alike, so the fold
// runs at the multiplier's limit of 8 bytes a cycle (about 25 GB/s in
// L1): more lanes would not make it faster. [CopyCheck] checks a received
// packet's ICRC while copying its payload to where it belongs
// (crccopy_amd64.s): the copy's loads and stores ride along in the
// fold's loop, so the payload is read once for both. [Append] copies a
// packet's payload into the buffer in the same way, in the pass that
// adds it to the ICRC.
//
// Of the pseudo-header, only the length fields, the IP ID, DF and the
// BTH change between the packets of one pair of IPv4 endpoints. An
// [ICRCCache] keeps the CRC of the rest for the pair it served last and
// adds the changing bytes in through tables (the CRC is linear), which
// halves the cost of a packet's headers; its AppendIPID,
// AppendTrailerIPID and CheckICRCID produce what the package functions
// do, and a CopyCheck keeps one of its own.
//
// # Other helpers
//
// PSN arithmetic on 24 bits ([PSNAdd], [PSNDiff]), the IBTA timer
// encodings ([RNRTimer], [LocalAckTimeout]), AETH syndromes ([ACK],
// [RNRNak], [NAK]) and the path MTU enumeration ([MTU]).
//
// [Pcap] writes classic pcap files of RoCEv2 packets with the Ethernet,
// IP and UDP headers the kernel would add, for tests that want Wireshark
// (tshark) to look at what they send; this package's own tests use it to
// have tshark dissect every opcode.
//
// The package owns nothing but these codecs: no sockets, and no state
// but what a caller's ICRCCache or CopyCheck holds.
package roce
