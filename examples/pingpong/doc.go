// Command pingpong is the smallest ucp program: the two ranks of a job
// started by mpiexec (or srun --mpi=pmi2) bounce a message back and forth,
// and rank 0 checks every echo and prints the one-way latency.
//
//	mpiexec -n 2 go run ./examples/pingpong
//	mpiexec -n 2 go run ./examples/pingpong -n 100000 -s 4096
//
// bootstrap.Start reads the launcher's environment, opens a ucp worker,
// publishes its address and returns the World; EP connects to the other
// rank (shm on one host, rc between hosts). Tags carry the sender's rank
// (bootstrap.Tag), and each receive names its sender (bootstrap.Exact).
package main
