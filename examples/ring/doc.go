// Command ring passes a token around the ranks of a job: each rank
// receives it from the previous rank, adds its rank plus one and sends it
// to the next; after every lap rank 0 checks the token and at the end
// prints it.
//
//	mpiexec -n 4 go run ./examples/ring
//	mpiexec -n 4 go run ./examples/ring -laps 100
package main
