package main

import (
	"fmt"
	"io"
)

// inMPI says whether a PMI-1 process manager (mpiexec) started us.
func inMPI() bool { return false }

func runMPI(cfg *config, stdout io.Writer) error {
	return fmt.Errorf("mpiexec launch: %w", errUnavailable)
}
