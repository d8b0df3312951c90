// Command rcpingpong is an ibv_rc_pingpong-compatible tool for ucgo's rc
// transport: same flags, same TCP exchange of "LID:QPN:PSN:GID" (see
// internal/oobexch), same strict SEND ping-pong and summary lines, so it can
// be run against rdma-core's ibv_rc_pingpong on soft-RoCE or a real HCA.
//
// Usage, as ibv_rc_pingpong:
//
//	rcpingpong [options]            # server
//	rcpingpong [options] SERVER     # client
//
// Besides rdma-core's flags, -a chooses the local IP address (the GID and
// the RoCEv2 source address), and -w how long a client retries a refused
// TCP connection. -x stops after the TCP exchange (advertising a QPN of
// -q and a random PSN): it checks the exchange against a real peer where no
// queue pair is available.
//
// TestInteropExchangeRXE boots the rxe-vm harness (../shared/tools/rxe-vm
// from the repository root, found by walking up) once and checks, against
// rdma-core's ibv_rc_pingpong and perftest's ib_write_bw and ib_read_bw in
// the VM, both roles of the rc_pingpong exchange and both roles of
// perftest's handshake (internal/oobexch). It needs root; it skips with a
// message when the harness or root is missing. RXEVM_CACHE names the
// writable folder for the VM image (built there by build.sh when missing;
// default: $XDG_CACHE_HOME/ucgo-rxevm).
//
// The RoCE data path needs the software RoCEv2 provider of
// transport/rc/verbs; until it is wired in, only -x runs.
package main
