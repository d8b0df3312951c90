package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"go.uber.org/multierr"
)

// profiled runs f, with Go's CPU profiler on when -cpuprofile names a
// file: the process writes its profile there when f returns. Under -l
// the server process writes its own to the same name with ".server"
// appended. The two, merged (go tool pprof -proto), are the kind of
// profile that default.pgo holds (see doc.go).
func profiled(cfg *config, f func() error) error {
	if cfg.CPUProf == "" {
		return f()
	}
	out, err := os.Create(cfg.CPUProf)
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		return multierr.Append(fmt.Errorf("cpu profile: %w", err), out.Close())
	}
	err = f()
	pprof.StopCPUProfile()
	return multierr.Append(err, out.Close())
}
