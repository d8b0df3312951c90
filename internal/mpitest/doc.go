// Package mpitest runs a program's main function as the ranks of an MPICH
// hydra job from its tests: Main, called from TestMain, plays the rank
// when the test binary is re-executed by mpiexec, and Run starts mpiexec
// with this test binary as the program. Run with a netns.Star puts each
// rank on its own "host": mpiexec runs in the first namespace with
// -launcher ssh, and its -launcher-exec is this binary again, which plays
// ssh by starting the command (hydra's proxy) inside the namespace whose
// address is the host, so that the job is launched as across hosts.
package mpitest
