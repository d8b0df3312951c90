// Command ucgo is ucgo's tool for users, as ucx_info is for UCX's: what a
// user runs first when two ranks will not talk.
//
//	ucgo info -d              transports and devices of this host: capabilities,
//	                          AM, put and get limits, atomics, link state, and for
//	                          rc the UDP port and the reuseport slot in use
//	ucgo info -c              the effective configuration: every UCGO_* variable,
//	                          its value and where it came from
//	ucgo info -e [-p ADDR]    open a worker, print its address and, given a peer
//	                          worker's address (hex, or @file), the lanes it would
//	                          pick towards it
//
// With no flag, info prints -d and -c. Addresses are printed and read in
// hex, as bootstrap publishes them.
package main
