package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxLine bounds one response line or frame.
const maxLine = 64 << 10

// PMI1 is one process's connection to its process manager in the PMI-1
// wire protocol ("simple PMI", MPICH's hydra and Slurm's pmi2 plugin).
type PMI1 struct {
	rw io.ReadWriteCloser
	r  *bufio.Reader

	job
	kvs string
	// Limits from get_maxes.
	maxKVSName, maxKey, maxValue int
}

// NewPMI1 initialises a PMI-1 client over rw, a connection to the process
// manager (init, get_maxes, get_appnum, get_my_kvsname), for the given
// rank of a job of size ranks (PMI_RANK, PMI_SIZE). It takes ownership of
// rw.
func NewPMI1(rw io.ReadWriteCloser, rank, size int) (*PMI1, error) {
	return newPMI1(rw, bufio.NewReaderSize(rw, 4096), rank, size)
}

func newPMI1(rw io.ReadWriteCloser, br *bufio.Reader, rank, size int) (*PMI1, error) {
	if size < 1 || rank < 0 || rank >= size {
		return nil, fmt.Errorf("pmi: rank %d of size %d", rank, size)
	}
	c := &PMI1{rw: rw, r: br, job: job{rank: rank, size: size}}
	r, err := c.call("cmd=init pmi_version=1 pmi_subversion=1", "response_to_init")
	if err != nil {
		return nil, err
	}
	if err := r.rc(); err != nil {
		return nil, err
	}
	if v := r.Attrs["pmi_version"]; v != "" && v != "1" {
		return nil, fmt.Errorf("%w: process manager speaks PMI version %s", ErrProtocol, v)
	}
	if err := c.setup(); err != nil {
		return nil, err
	}
	return c, nil
}

// setup asks for the limits, the application number and the key-value
// space's name after a successful init.
func (c *PMI1) setup() error {
	r, err := c.call("cmd=get_maxes", "maxes")
	if err != nil {
		return err
	}
	if c.maxKVSName, err = r.intAttr("kvsname_max"); err != nil {
		return err
	}
	if c.maxKey, err = r.intAttr("keylen_max"); err != nil {
		return err
	}
	if c.maxValue, err = r.intAttr("vallen_max"); err != nil {
		return err
	}
	if r, err = c.call("cmd=get_appnum", "appnum"); err != nil {
		return err
	}
	// Slurm answers appnum=-1 when there is no MPMD command line.
	if v := r.Attrs["appnum"]; v == "-1" {
		c.appNum = 0
	} else if c.appNum, err = r.intAttr("appnum"); err != nil {
		return err
	}
	if r, err = c.call("cmd=get_my_kvsname", "my_kvsname"); err != nil {
		return err
	}
	if c.kvs = r.Attrs["kvsname"]; c.kvs == "" {
		return fmt.Errorf("%w: my_kvsname without kvsname", ErrProtocol)
	}
	return nil
}

// Version is 1.
func (c *PMI1) Version() int { return 1 }

// KVS is the name of the job's key-value space.
func (c *PMI1) KVS() string { return c.kvs }

// MaxKey and MaxValue are the process manager's limits on a key and a
// value, in bytes.
func (c *PMI1) MaxKey() int { return c.maxKey }

// lineMax1 is the longest PMI-1 request line, newline included, that
// MPICH's and Slurm's process managers read whole (PMIU_MAXLINE).
const lineMax1 = 1024

// MaxValue is the longest value the process manager stores whole for any
// key: one less than its vallen_max, which counts C's terminating NUL,
// and short enough that a put request with the longest key fits one
// request line.
func (c *PMI1) MaxValue() int {
	line := lineMax1 - len("cmd=put kvsname= key= value=\n") - len(c.kvs) - c.maxKey
	return max(min(c.maxValue-1, line), 0)
}

func checkToken(what, s string, max int) error {
	if s == "" || strings.ContainsAny(s, " =\n\r\x00") {
		return fmt.Errorf("pmi: %s %q is empty or contains a space, '=' or a newline", what, s)
	}
	if max > 0 && len(s) > max {
		return fmt.Errorf("pmi: %s of %d bytes exceeds the process manager's %d", what, len(s), max)
	}
	return nil
}

// Put stores key=value in the job's key-value space; other ranks see it
// after the next Barrier.
func (c *PMI1) Put(key, value string) error {
	if err := checkToken("key", key, c.maxKey); err != nil {
		return err
	}
	req := "cmd=put kvsname=" + c.kvs + " key=" + key + " value=" + value
	if strings.ContainsAny(value, " ;\n\r\x00") || (c.maxValue > 0 && len(value) > c.maxValue-1) || len(req)+1 > lineMax1 {
		return fmt.Errorf("pmi: value of %d bytes for %q is too long or contains a space, ';' or newline", len(value), key)
	}
	r, err := c.call(req, "put_result")
	if err != nil {
		return err
	}
	return r.rc()
}

// Get returns the value of key.
func (c *PMI1) Get(key string) (string, error) {
	if err := checkToken("key", key, c.maxKey); err != nil {
		return "", err
	}
	r, err := c.call("cmd=get kvsname="+c.kvs+" key="+key, "get_result")
	if err != nil {
		return "", err
	}
	if err := r.rc(); err != nil {
		return "", fmt.Errorf("get %q: %w", key, err)
	}
	v, ok := r.Attrs["value"]
	if !ok {
		return "", fmt.Errorf("%w: get_result without value", ErrProtocol)
	}
	return v, nil
}

// Barrier returns when every rank of the job has entered it.
func (c *PMI1) Barrier() error {
	r, err := c.call("cmd=barrier_in", "barrier_out")
	if err != nil {
		return err
	}
	if _, ok := r.Attrs["rc"]; ok {
		return r.rc()
	}
	return nil
}

// Finalize tells the process manager this process is done with PMI and
// closes the connection.
func (c *PMI1) Finalize() error {
	_, err := c.call("cmd=finalize", "finalize_ack")
	return errors.Join(err, c.rw.Close())
}

// Abort asks the process manager to end the whole job with exit code
// (cmd=abort exitcode=N); hydra then kills every rank, this one included.
// PMI-1 carries no message: msg is ignored. It does not wait for an
// answer.
func (c *PMI1) Abort(code int, msg string) error {
	_, err := fmt.Fprintf(c.rw, "cmd=abort exitcode=%d\n", code)
	return err
}

// Close closes the connection without finalizing.
func (c *PMI1) Close() error { return c.rw.Close() }

func (c *PMI1) call(req, want string) (Response, error) {
	if _, err := io.WriteString(c.rw, req+"\n"); err != nil {
		return Response{}, fmt.Errorf("pmi: send %q: %w", strings.Fields(req)[0], err)
	}
	line, err := c.readLine()
	if err != nil {
		return Response{}, fmt.Errorf("pmi: waiting for %s: %w", want, err)
	}
	r, err := ParseResponse(line)
	if err != nil {
		return r, err
	}
	if r.Cmd != want {
		return r, fmt.Errorf("%w: got cmd=%s, want cmd=%s", ErrProtocol, r.Cmd, want)
	}
	return r, nil
}

func (c *PMI1) readLine() (string, error) { return readLine(c.r) }

// readLine reads one newline-terminated line of at most maxLine bytes.
func readLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		frag, err := r.ReadSlice('\n')
		b = append(b, frag...)
		if len(b) > maxLine {
			return "", fmt.Errorf("%w: response longer than %d bytes", ErrProtocol, maxLine)
		}
		switch {
		case err == nil:
			return string(b), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return "", fmt.Errorf("process manager closed the connection: %w", io.ErrUnexpectedEOF)
		default:
			return "", err
		}
	}
}

// Response is one decoded response line.
type Response struct {
	Cmd   string
	Attrs map[string]string
}

// ParseResponse decodes "cmd=NAME k=v k=v ...\n". Values may contain '='
// (the first one separates key and value); duplicate keys and a missing or
// non-leading cmd are errors.
func ParseResponse(line string) (Response, error) {
	line = strings.TrimSuffix(line, "\n")
	if len(line) > maxLine {
		return Response{}, fmt.Errorf("%w: line of %d bytes", ErrProtocol, len(line))
	}
	if strings.ContainsAny(line, "\n\x00") {
		return Response{}, fmt.Errorf("%w: control character in %q", ErrProtocol, line)
	}
	r := Response{Attrs: map[string]string{}}
	for i, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" {
			return Response{}, fmt.Errorf("%w: %q is not key=value", ErrProtocol, f)
		}
		if i == 0 {
			if k != "cmd" || v == "" {
				return Response{}, fmt.Errorf("%w: response does not start with cmd=: %q", ErrProtocol, line)
			}
			r.Cmd = v
			continue
		}
		if k == "cmd" {
			return Response{}, fmt.Errorf("%w: second cmd in %q", ErrProtocol, line)
		}
		if _, dup := r.Attrs[k]; dup {
			return Response{}, fmt.Errorf("%w: duplicate %q in %q", ErrProtocol, k, line)
		}
		r.Attrs[k] = v
	}
	if r.Cmd == "" {
		return Response{}, fmt.Errorf("%w: empty response", ErrProtocol)
	}
	return r, nil
}

// rc turns a non-zero rc attribute into an error (with msg if present).
func (r Response) rc() error {
	v, ok := r.Attrs["rc"]
	if !ok {
		return fmt.Errorf("%w: cmd=%s without rc", ErrProtocol, r.Cmd)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return fmt.Errorf("%w: cmd=%s rc=%q", ErrProtocol, r.Cmd, v)
	}
	if n != 0 {
		return fmt.Errorf("pmi: %s failed: rc=%d %s", r.Cmd, n, r.Attrs["msg"])
	}
	return nil
}

func (r Response) intAttr(k string) (int, error) {
	v, ok := r.Attrs[k]
	if !ok {
		return 0, fmt.Errorf("%w: cmd=%s without %s", ErrProtocol, r.Cmd, k)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: cmd=%s %s=%q", ErrProtocol, r.Cmd, k, v)
	}
	return n, nil
}
