package pmi

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

// maxLine bounds one response line.
const maxLine = 64 << 10

// Client is one process's connection to its process manager.
type Client struct {
	rw io.ReadWriteCloser
	r  *bufio.Reader

	Rank, Size, AppNum int
	KVS                string
	// Limits from get_maxes.
	MaxKVSName, MaxKey, MaxValue int
}

// InEnv reports whether the environment names a PMI process manager.
func InEnv() bool {
	return os.Getenv("PMI_FD") != "" || os.Getenv("PMI_PORT") != ""
}

// FromEnv connects through PMI_FD or PMI_PORT and initialises the client
// with PMI_RANK and PMI_SIZE.
func FromEnv() (*Client, error) {
	rank, err := envInt("PMI_RANK")
	if err != nil {
		return nil, err
	}
	size, err := envInt("PMI_SIZE")
	if err != nil {
		return nil, err
	}
	var rw io.ReadWriteCloser
	switch {
	case os.Getenv("PMI_FD") != "":
		fd, err := envInt("PMI_FD")
		if err != nil {
			return nil, err
		}
		f := os.NewFile(uintptr(fd), "pmi")
		if f == nil {
			return nil, fmt.Errorf("pmi: PMI_FD=%d is not a file descriptor", fd)
		}
		rw = f
	case os.Getenv("PMI_PORT") != "":
		c, err := net.Dial("tcp", os.Getenv("PMI_PORT"))
		if err != nil {
			return nil, fmt.Errorf("pmi: PMI_PORT: %w", err)
		}
		rw = c
	default:
		return nil, ErrNoPMI
	}
	c, err := New(rw, rank, size)
	if err != nil {
		rw.Close()
		return nil, err
	}
	return c, nil
}

func envInt(name string) (int, error) {
	v := os.Getenv(name)
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("pmi: %s=%q is not a non-negative number", name, v)
	}
	return n, nil
}

// New initialises a client over rw, a connection to the process manager
// (init, get_maxes, get_appnum, get_my_kvsname). It takes ownership of rw.
func New(rw io.ReadWriteCloser, rank, size int) (*Client, error) {
	if size < 1 || rank >= size {
		return nil, fmt.Errorf("pmi: rank %d of size %d", rank, size)
	}
	c := &Client{rw: rw, r: bufio.NewReaderSize(rw, 4096), Rank: rank, Size: size}
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
	if r, err = c.call("cmd=get_maxes", "maxes"); err != nil {
		return nil, err
	}
	if c.MaxKVSName, err = r.intAttr("kvsname_max"); err != nil {
		return nil, err
	}
	if c.MaxKey, err = r.intAttr("keylen_max"); err != nil {
		return nil, err
	}
	if c.MaxValue, err = r.intAttr("vallen_max"); err != nil {
		return nil, err
	}
	if r, err = c.call("cmd=get_appnum", "appnum"); err != nil {
		return nil, err
	}
	if c.AppNum, err = r.intAttr("appnum"); err != nil {
		return nil, err
	}
	if r, err = c.call("cmd=get_my_kvsname", "my_kvsname"); err != nil {
		return nil, err
	}
	if c.KVS = r.Attrs["kvsname"]; c.KVS == "" {
		return nil, fmt.Errorf("%w: my_kvsname without kvsname", ErrProtocol)
	}
	return c, nil
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
func (c *Client) Put(key, value string) error {
	if err := checkToken("key", key, c.MaxKey); err != nil {
		return err
	}
	if strings.ContainsAny(value, " \n\r\x00") || (c.MaxValue > 0 && len(value) > c.MaxValue) {
		return fmt.Errorf("pmi: value of %d bytes for %q is too long or contains a space or newline", len(value), key)
	}
	r, err := c.call("cmd=put kvsname="+c.KVS+" key="+key+" value="+value, "put_result")
	if err != nil {
		return err
	}
	return r.rc()
}

// Get returns the value of key.
func (c *Client) Get(key string) (string, error) {
	if err := checkToken("key", key, c.MaxKey); err != nil {
		return "", err
	}
	r, err := c.call("cmd=get kvsname="+c.KVS+" key="+key, "get_result")
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
func (c *Client) Barrier() error {
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
func (c *Client) Finalize() error {
	_, err := c.call("cmd=finalize", "finalize_ack")
	return errors.Join(err, c.rw.Close())
}

// Abort asks the process manager to end the whole job with exit code
// (cmd=abort exitcode=N); hydra then kills every rank, this one included.
// It does not wait for an answer.
func (c *Client) Abort(code int) error {
	_, err := fmt.Fprintf(c.rw, "cmd=abort exitcode=%d\n", code)
	return err
}

// Close closes the connection without finalizing.
func (c *Client) Close() error { return c.rw.Close() }

func (c *Client) call(req, want string) (Response, error) {
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

func (c *Client) readLine() (string, error) {
	var b []byte
	for {
		frag, err := c.r.ReadSlice('\n')
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
