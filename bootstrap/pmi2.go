package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxValue2 is the longest value PMI-2 process managers store whole:
// PMI2_MAX_VALLEN of MPICH's and Slurm's implementations (1024) less C's
// terminating NUL.
const maxValue2 = 1023

// PMI2 is one process's connection to its process manager in the PMI-2
// wire protocol (Slurm's srun --mpi=pmi2, MPICH's hydra).
type PMI2 struct {
	rw io.ReadWriteCloser
	r  *bufio.Reader

	job
	jobID  string
	fences int // Barriers so far
}

// NewPMI2 initialises a PMI-2 client over rw for the given rank
// (PMI_RANK) of job jobID (PMI_JOBID, which Slurm sets and requires back
// in fullinit; empty when the launcher sets none): the PMI-1 style init
// line asking for version 2, then fullinit and job-getid. It takes
// ownership of rw.
func NewPMI2(rw io.ReadWriteCloser, rank int, jobID string) (*PMI2, error) {
	return newPMI2(rw, bufio.NewReaderSize(rw, 4096), rank, jobID)
}

func newPMI2(rw io.ReadWriteCloser, br *bufio.Reader, rank int, jobID string) (*PMI2, error) {
	c := &PMI2{rw: rw, r: br}
	r, err := initLine(rw, c.r, 2, 0)
	if err != nil {
		return nil, err
	}
	if v := r.Attrs["pmi_version"]; v != "2" {
		return nil, fmt.Errorf("%w: process manager answered version %q to a PMI-2 init", ErrProtocol, v)
	}
	if err := c.fullinit(rank, jobID); err != nil {
		return nil, err
	}
	return c, nil
}

// Negotiate initialises a client over rw that offers PMI-2 and speaks the
// version the process manager answers with: PMI-2 (for job jobID, as in
// NewPMI2), or PMI-1 for a rank of size ranks (size is only needed then;
// PMI-2 learns it from fullinit).
func Negotiate(rw io.ReadWriteCloser, rank, size int, jobID string) (Client, error) {
	return negotiate(rw, bufio.NewReaderSize(rw, 4096), rank, size, jobID)
}

func negotiate(rw io.ReadWriteCloser, br *bufio.Reader, rank, size int, jobID string) (Client, error) {
	r, err := initLine(rw, br, 2, 0)
	if err != nil {
		return nil, fmt.Errorf("%w (UCGO_PMI=1 skips offering PMI-2)", err)
	}
	switch v := r.Attrs["pmi_version"]; v {
	case "2":
		c := &PMI2{rw: rw, r: br}
		if err := c.fullinit(rank, jobID); err != nil {
			return nil, err
		}
		return c, nil
	case "1":
		if size < 1 || rank < 0 || rank >= size {
			return nil, fmt.Errorf("pmi: rank %d of size %d", rank, size)
		}
		c := &PMI1{rw: rw, r: br, job: job{rank: rank, size: size}}
		if err := c.setup(); err != nil {
			return nil, err
		}
		return c, nil
	default:
		return nil, fmt.Errorf("%w: process manager answered version %q", ErrProtocol, v)
	}
}

// initLine sends the PMI-1 format init request for version.subversion and
// returns its successful response.
func initLine(w io.Writer, br *bufio.Reader, version, sub int) (Response, error) {
	if _, err := fmt.Fprintf(w, "cmd=init pmi_version=%d pmi_subversion=%d\n", version, sub); err != nil {
		return Response{}, fmt.Errorf("pmi: send init: %w", err)
	}
	line, err := readLine(br)
	if err != nil {
		return Response{}, fmt.Errorf("pmi: waiting for response_to_init: %w", err)
	}
	r, err := ParseResponse(line)
	if err != nil {
		return r, err
	}
	if r.Cmd != "response_to_init" {
		return r, fmt.Errorf("%w: got cmd=%s, want cmd=response_to_init", ErrProtocol, r.Cmd)
	}
	return r, r.rc()
}

func (c *PMI2) fullinit(rank int, jobID string) error {
	kv := []string{"pmirank", strconv.Itoa(rank), "threaded", "FALSE"}
	if jobID != "" {
		kv = append([]string{"pmijobid", jobID}, kv...)
	}
	r, err := c.call("fullinit", "fullinit-response", kv...)
	if err != nil {
		return err
	}
	if c.rank, err = r.intAttr("rank"); err != nil {
		return err
	}
	if c.size, err = r.intAttr("size"); err != nil {
		return err
	}
	if c.rank >= c.size || c.size < 1 {
		return fmt.Errorf("%w: fullinit gave rank %d of size %d", ErrProtocol, c.rank, c.size)
	}
	if c.rank != rank {
		return fmt.Errorf("%w: fullinit gave rank %d, PMI_RANK is %d", ErrProtocol, c.rank, rank)
	}
	// Slurm answers appnum=-1 when there is no MPMD command line.
	if v, ok := r.Attrs["appnum"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%w: fullinit-response appnum=%q", ErrProtocol, v)
		}
		c.appNum = max(n, 0)
	}
	if r, err = c.call("job-getid", "job-getid-response"); err != nil {
		return err
	}
	if c.jobID = r.Attrs["jobid"]; c.jobID == "" {
		return fmt.Errorf("%w: job-getid-response without jobid", ErrProtocol)
	}
	return nil
}

// Version is 2.
func (c *PMI2) Version() int { return 2 }

// JobID is the job's id, which names its key-value space.
func (c *PMI2) JobID() string { return c.jobID }

// MaxValue is the longest value PMI-2 stores (1023 bytes).
func (c *PMI2) MaxValue() int { return maxValue2 }

// Put stores key=value (kvs-put); other ranks see it after the next
// Barrier.
func (c *PMI2) Put(key, value string) error {
	if err := checkToken("key", key, 0); err != nil {
		return err
	}
	if strings.ContainsAny(key, ";") || strings.ContainsAny(value, " ;\n\r\x00") || len(value) > maxValue2 {
		return fmt.Errorf("pmi: value of %d bytes for %q is too long or contains a space, ';' or newline", len(value), key)
	}
	_, err := c.call("kvs-put", "kvs-put-response", "key", key, "value", value)
	return err
}

// Get returns the value of key (kvs-get in the job's space).
func (c *PMI2) Get(key string) (string, error) {
	if err := checkToken("key", key, 0); err != nil {
		return "", err
	}
	if strings.Contains(key, ";") {
		return "", fmt.Errorf("pmi: key %q contains ';'", key)
	}
	r, err := c.call("kvs-get", "kvs-get-response", "jobid", c.jobID, "srcid", "-1", "key", key)
	if err != nil {
		return "", fmt.Errorf("get %q: %w", key, err)
	}
	if r.Attrs["found"] != "TRUE" {
		return "", fmt.Errorf("pmi: get %q: not found", key)
	}
	v, ok := r.Attrs["value"]
	if !ok {
		return "", fmt.Errorf("%w: kvs-get-response without value", ErrProtocol)
	}
	return v, nil
}

// Barrier returns when every rank has entered it, and the values put
// before it are visible to all. It is kvs-fence followed by a kvs-get of
// a key nobody puts (ucgo-barrier-N): under Slurm the fence itself waits
// for every rank, while MPICH's hydra (4.0) answers a fence at once and
// instead holds a get of a missing key until every rank has fenced.
func (c *PMI2) Barrier() error {
	c.fences++
	if _, err := c.call("kvs-fence", "kvs-fence-response"); err != nil {
		return err
	}
	_, err := c.call("kvs-get", "kvs-get-response", "jobid", c.jobID, "srcid", "-1", "key", fmt.Sprintf("ucgo-barrier-%d", c.fences))
	return err
}

// Abort asks the process manager to end the whole job (abort with
// isworld=TRUE and msg). PMI-2 carries no exit code: code is ignored.
// It does not wait for an answer.
func (c *PMI2) Abort(code int, msg string) error {
	msg = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == 0 {
			return ' '
		}
		return r
	}, msg)
	_, err := c.rw.Write(EncodeCommand2("abort", "isworld", "TRUE", "msg", msg))
	return err
}

// Finalize tells the process manager this process is done and closes the
// connection.
func (c *PMI2) Finalize() error {
	_, err := c.call("finalize", "finalize-response")
	return errors.Join(err, c.rw.Close())
}

// Close closes the connection without finalizing.
func (c *PMI2) Close() error { return c.rw.Close() }

func (c *PMI2) call(cmd, want string, kv ...string) (Response, error) {
	if _, err := c.rw.Write(EncodeCommand2(cmd, kv...)); err != nil {
		return Response{}, fmt.Errorf("pmi: send %s: %w", cmd, err)
	}
	r, err := readFrame2(c.r)
	if err != nil {
		return Response{}, fmt.Errorf("pmi: waiting for %s: %w", want, err)
	}
	if r.Cmd != want {
		return r, fmt.Errorf("%w: got cmd=%s, want cmd=%s", ErrProtocol, r.Cmd, want)
	}
	if v, ok := r.Attrs["rc"]; ok && v != "0" {
		msg := r.Attrs["errmsg"]
		if msg == "" {
			msg = r.Attrs["msg"]
		}
		return r, fmt.Errorf("pmi: %s failed: rc=%s %s", cmd, v, msg)
	}
	return r, nil
}
