package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/ucgo/ucgo/bootstrap"
)

// inMPI says whether a PMI process manager (mpiexec, srun) started us.
func inMPI() bool { return bootstrap.InEnv() }

// pmiOOB is the out-of-band channel under mpiexec: setups travel through
// the job's key-value space, barriers are PMI barriers.
type pmiOOB struct {
	c   bootstrap.Client
	seq int
}

func (p *pmiOOB) publish(name string, m *message) error {
	v := hex.EncodeToString(m.encode())
	return p.c.Put(fmt.Sprintf("%s-%d-%d", name, p.seq, p.c.Rank()), v)
}

func (p *pmiOOB) fetch(name string, rank int) (message, error) {
	v, err := p.c.Get(fmt.Sprintf("%s-%d-%d", name, p.seq, rank))
	if err != nil {
		return message{}, err
	}
	b, err := hex.DecodeString(v)
	if err != nil {
		return message{}, fmt.Errorf("%w: rank %d's %s is not hex", ErrFormat, rank, name)
	}
	return decodeMessage(b)
}

func (p *pmiOOB) exchange(mine setup) (setup, error) {
	p.seq++
	if err := p.publish("setup", &message{Kind: kindSetup, Setup: mine}); err != nil {
		return setup{}, err
	}
	if err := p.c.Barrier(); err != nil {
		return setup{}, err
	}
	m, err := p.fetch("setup", 1-p.c.Rank())
	if err == nil && m.Kind != kindSetup {
		err = fmt.Errorf("%w: message kind %d, want setup", ErrFormat, m.Kind)
	}
	return m.Setup, err
}

func (p *pmiOOB) barrier() error { return p.c.Barrier() }

func (p *pmiOOB) Close() error { return p.c.Finalize() }

// runMPI runs one side under "mpiexec -n 2": rank 0 is the initiator and
// prints. Both ranks publish their parameters and refuse to run when they
// differ (both ranks see that, so both exit cleanly). A rank that fails
// later prints its error and aborts the job, so that the other rank does
// not wait for it forever.
func runMPI(cfg *config, stdout, stderr io.Writer) error {
	c, err := bootstrap.FromEnv()
	if err != nil {
		return err
	}
	p := &pmiOOB{c: c}
	if err := agree(cfg, p); err != nil {
		return errors.Join(err, p.Close())
	}
	if err := runRank(cfg, p, stdout); err != nil {
		fmt.Fprintf(stderr, "perftest: rank %d: %s\n", c.Rank(), errText(err))
		_ = c.Abort(exitCode(err), errText(err))
		c.Close()
		os.Exit(exitCode(err))
	}
	return p.Close()
}

// agree checks the job size and that both ranks run the same test.
func agree(cfg *config, p *pmiOOB) error {
	c := p.c
	if c.Size() != 2 {
		return fmt.Errorf("%w: perftest runs on exactly 2 ranks (mpiexec -n 2), not %d", errUsage, c.Size())
	}
	mine := &message{Kind: kindParams, Params: cfg.params()}
	if err := p.publish("params", mine); err != nil {
		return err
	}
	if err := c.Barrier(); err != nil {
		return err
	}
	m, err := p.fetch("params", 1-c.Rank())
	if err != nil {
		return err
	}
	if !bytes.Equal(m.encode(), mine.encode()) {
		return fmt.Errorf("%w: rank %d runs %+v, rank %d %+v", errUsage, c.Rank(), mine.Params, 1-c.Rank(), m.Params)
	}
	_, err = checkRunnable(cfg)
	return err
}

func runRank(cfg *config, p *pmiOOB, stdout io.Writer) error {
	c := p.c
	cpu := cfg.CPU
	if cpu < 0 && runtime.NumCPU() > 1 {
		cpu = c.Rank() * (runtime.NumCPU() - 1)
	}
	pin(cpu)
	if c.Rank() == 0 {
		return runSide(cfg, p, true, writer(cfg, stdout), progressOut(stdout))
	}
	return runSide(cfg, p, false, nil, nil)
}
