package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
)

// ErrProtocol is wrapped by errors about malformed or unexpected responses.
var ErrProtocol = errors.New("pmi: protocol error")

// ErrNoPMI is returned by FromEnv when no process manager started us.
var ErrNoPMI = errors.New("pmi: not started by a PMI process manager (no PMI_FD or PMI_PORT)")

// Client is a process's connection to the process manager that started
// it, in either protocol version. Put stores a value in the job's
// key-value space; Barrier waits for every rank and makes the values put
// before it visible to all (PMI-1 barrier, PMI-2 kvs-fence); Get reads one.
// Keys must be non-empty and contain no space, '=', ';' or newline; values
// no space, ';' or newline (encode binary values, e.g. in hex). A Client
// is not safe for concurrent use.
type Client interface {
	Rank() int
	Size() int
	// Version is the protocol spoken: 1 or 2.
	Version() int
	// MaxValue is the longest value the process manager stores.
	MaxValue() int
	Put(key, value string) error
	Get(key string) (string, error)
	Barrier() error
	// Abort asks the process manager to end the whole job with exit
	// status code; msg is shown where the protocol carries it (PMI-2).
	Abort(code int, msg string) error
	// Finalize tells the process manager this rank is done with it and
	// closes the connection.
	Finalize() error
	// Close closes the connection without finalizing.
	Close() error
}

// VersionEnv chooses the protocol FromEnv speaks: "1", "2", or empty (or
// "auto") to offer version 2 and speak what the process manager answers.
const VersionEnv = "UCGO_PMI"

// InEnv reports whether the environment names a PMI process manager.
func InEnv() bool {
	return os.Getenv("PMI_FD") != "" || os.Getenv("PMI_PORT") != ""
}

// FromEnv connects to the process manager named by the environment:
// PMI_FD (a connected socket, set by hydra and by Slurm's srun
// --mpi=pmi2) or PMI_PORT (host:port), with PMI_RANK and PMI_SIZE giving
// this process's place and PMI_JOBID, when set (Slurm), the job's id. UCGO_PMI picks the protocol version (see
// VersionEnv). It returns ErrNoPMI when no process manager started us.
func FromEnv() (Client, error) {
	if !InEnv() {
		return nil, ErrNoPMI
	}
	version := os.Getenv(VersionEnv)
	switch version {
	case "", "auto", "1", "2":
	default:
		return nil, fmt.Errorf("pmi: %s=%q: want 1, 2 or auto", VersionEnv, version)
	}
	conn, err := dialEnv()
	if err != nil {
		return nil, err
	}
	rw, br := io.ReadWriteCloser(conn.rw), conn.br
	rank, size := conn.rank, conn.size
	var c Client
	switch version {
	case "1":
		c, err = newPMI1(rw, br, rank, size)
	case "2":
		c, err = newPMI2(rw, br, rank, os.Getenv("PMI_JOBID"))
	default:
		c, err = negotiate(rw, br, rank, size, os.Getenv("PMI_JOBID"))
	}
	if err != nil {
		rw.Close()
		return nil, err
	}
	return c, nil
}

// pmConn is a connection to the process manager and the place it gives us.
type pmConn struct {
	rw         io.ReadWriteCloser
	br         *bufio.Reader
	rank, size int
}

// dialEnv connects through PMI_FD, with PMI_RANK and PMI_SIZE, or through
// PMI_PORT: then, when PMI_ID is set (hydra's -pmi-port), the process
// manager tells the rank and size after an initack handshake.
func dialEnv() (pmConn, error) {
	if os.Getenv("PMI_FD") != "" {
		fd, err := envInt("PMI_FD")
		if err != nil {
			return pmConn{}, err
		}
		rank, size, err := envPlace()
		if err != nil {
			return pmConn{}, err
		}
		f := os.NewFile(uintptr(fd), "pmi")
		if f == nil {
			return pmConn{}, fmt.Errorf("pmi: PMI_FD=%d is not a file descriptor", fd)
		}
		return pmConn{rw: f, br: bufio.NewReaderSize(f, 4096), rank: rank, size: size}, nil
	}
	nc, err := net.Dial("tcp", os.Getenv("PMI_PORT"))
	if err != nil {
		return pmConn{}, fmt.Errorf("pmi: PMI_PORT: %w", err)
	}
	c := pmConn{rw: nc, br: bufio.NewReaderSize(nc, 4096)}
	if os.Getenv("PMI_ID") == "" {
		if c.rank, c.size, err = envPlace(); err != nil {
			nc.Close()
			return pmConn{}, err
		}
		return c, nil
	}
	id, err := envInt("PMI_ID")
	if err == nil {
		c.rank, c.size, err = initack(nc, c.br, id)
	}
	if err != nil {
		nc.Close()
		return pmConn{}, err
	}
	return c, nil
}

// envPlace reads PMI_RANK and PMI_SIZE.
func envPlace() (rank, size int, err error) {
	if rank, err = envInt("PMI_RANK"); err != nil {
		return 0, 0, err
	}
	if size, err = envInt("PMI_SIZE"); err != nil {
		return 0, 0, err
	}
	return rank, size, nil
}

// initack identifies us on a PMI_PORT connection ("cmd=initack pmiid=ID")
// and reads the answer and the "cmd=set" lines that give size and rank
// (and debug, ignored).
func initack(w io.Writer, br *bufio.Reader, id int) (rank, size int, err error) {
	if _, err := fmt.Fprintf(w, "cmd=initack pmiid=%d\n", id); err != nil {
		return 0, 0, fmt.Errorf("pmi: send initack: %w", err)
	}
	rank, size = -1, -1
	for i := 0; i < 4; i++ {
		line, err := readLine(br)
		if err != nil {
			return 0, 0, fmt.Errorf("pmi: initack: %w", err)
		}
		r, err := ParseResponse(line)
		if err != nil {
			return 0, 0, err
		}
		switch {
		case i == 0 && r.Cmd == "initack":
		case i > 0 && r.Cmd == "set" && r.Attrs["size"] != "":
			size, err = r.intAttr("size")
		case i > 0 && r.Cmd == "set" && r.Attrs["rank"] != "":
			rank, err = r.intAttr("rank")
		case i > 0 && r.Cmd == "set" && r.Attrs["debug"] != "":
		default:
			err = fmt.Errorf("%w: unexpected %q during initack", ErrProtocol, strings.TrimSpace(line))
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if rank < 0 || size < 1 || rank >= size {
		return 0, 0, fmt.Errorf("%w: initack gave rank %d of size %d", ErrProtocol, rank, size)
	}
	return rank, size, nil
}

func envInt(name string) (int, error) {
	v := os.Getenv(name)
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("pmi: %s=%q is not a non-negative number", name, v)
	}
	return n, nil
}
