// Package oobexch encodes and decodes the out-of-band TCP messages that
// rdma-core's example programs and perftest use to swap queue pair
// addresses before any RoCE traffic flows.
//
// Two formats are covered:
//
//   - [Dest]: ibv_rc_pingpong's "%04x:%06x:%06x:%s" line (LID, QPN, PSN,
//     32 hex digits of GID), sent as 51 characters plus a NUL, 52 bytes in
//     one write; the client ends the exchange with "done" and its NUL.
//   - [PerftestKey]: perftest's KEY_PRINT_FMT_GID line (LID, outstanding
//     reads, QPN, PSN, rkey, virtual address, 16 GID bytes, SRQ number),
//     sent as 107 characters plus a NUL, 108 bytes.
//
// The package owns only byte formats; the tools in bench/ own sockets and
// queue pairs. Decoders never panic: bad input yields an error wrapping
// [ErrFormat].
package oobexch
