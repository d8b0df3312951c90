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
// The RoCE data path needs the software RoCEv2 provider of
// transport/rc/verbs; until it is wired in, only -x runs.
package main
