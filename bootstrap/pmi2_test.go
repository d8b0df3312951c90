package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// fakePM2 is a PMI-2 process manager for n ranks over in-memory pipes; it
// answers the init line in PMI-1 format with version (2, or 1 to refuse
// PMI-2 and go on in PMI-1).
type fakePM2 struct {
	n       int
	mu      sync.Mutex
	kvs     map[string]string
	waiting []net.Conn
	log     []string
}

func (f *fakePM2) serve(t *testing.T, c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil || line != "cmd=init pmi_version=2 pmi_subversion=0\n" {
		t.Errorf("fake PM2: init line %q, %v", line, err)
		return
	}
	fmt.Fprintf(c, "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")
	for {
		req, err := readFrame2(r)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.log = append(f.log, req.Cmd+" "+fmt.Sprint(req.Attrs))
		f.mu.Unlock()
		reply := func(w net.Conn, cmd string, kv ...string) { w.Write(EncodeCommand2(cmd, kv...)) }
		switch req.Cmd {
		case "fullinit":
			reply(c, "fullinit-response", "pmi-version", "2", "pmi-subversion", "0", "rank", req.Attrs["pmirank"],
				"size", fmt.Sprint(f.n), "appnum", "-1", "debugged", "FALSE", "pmiverbose", "FALSE", "rc", "0")
		case "job-getid":
			reply(c, "job-getid-response", "jobid", "kvs_7;0", "rc", "0")
		case "kvs-put":
			f.mu.Lock()
			f.kvs[req.Attrs["key"]] = req.Attrs["value"]
			f.mu.Unlock()
			reply(c, "kvs-put-response", "rc", "0")
		case "kvs-get":
			f.mu.Lock()
			v, ok := f.kvs[req.Attrs["key"]]
			f.mu.Unlock()
			if req.Attrs["jobid"] != "kvs_7;0" {
				reply(c, "kvs-get-response", "rc", "-1", "errmsg", "wrong jobid "+req.Attrs["jobid"])
			} else if ok {
				reply(c, "kvs-get-response", "found", "TRUE", "value", v, "rc", "0")
			} else {
				reply(c, "kvs-get-response", "found", "FALSE", "rc", "0")
			}
		case "kvs-fence":
			f.mu.Lock()
			f.waiting = append(f.waiting, c)
			if len(f.waiting) == f.n {
				for _, w := range f.waiting {
					reply(w, "kvs-fence-response", "rc", "0")
				}
				f.waiting = nil
			}
			f.mu.Unlock()
		case "finalize":
			reply(c, "finalize-response", "rc", "0")
			return
		default:
			t.Errorf("fake PM2: unknown request %q", req.Cmd)
			return
		}
	}
}

// Two PMI-2 clients against the fake process manager: the frames they
// send are PMI-2's, a jobid with ';' survives the escaping, values cross
// the fence.
func TestFakeServer2(t *testing.T) {
	pm := &fakePM2{n: 2, kvs: map[string]string{}}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for rank := 0; rank < 2; rank++ {
		a, b := net.Pipe()
		go pm.serve(t, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[rank] = func() error {
				c, err := Negotiate(a, rank, -1, "7.0")
				if err != nil {
					return err
				}
				p, ok := c.(*PMI2)
				if !ok || p.Rank() != rank || p.Size() != 2 || p.JobID() != "kvs_7;0" || p.AppNum() != 0 || p.Version() != 2 {
					return fmt.Errorf("client state %+v", c)
				}
				if err := c.Put(fmt.Sprintf("addr-%d", rank), fmt.Sprintf("%x", rank*1000+7)); err != nil {
					return err
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				for r := 0; r < 2; r++ {
					v, err := c.Get(fmt.Sprintf("addr-%d", r))
					if err != nil {
						return err
					}
					if want := fmt.Sprintf("%x", r*1000+7); v != want {
						return fmt.Errorf("addr-%d = %q, want %q", r, v, want)
					}
				}
				if _, err := c.Get("missing"); err == nil || !strings.Contains(err.Error(), "not found") {
					return fmt.Errorf("get of a missing key: %v", err)
				}
				if err := c.Put("k", "a;b"); err == nil {
					return fmt.Errorf("value with ';' accepted")
				}
				return c.Finalize()
			}()
		}()
	}
	wg.Wait()
	for rank, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", rank, err)
		}
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	count := map[string]int{}
	for _, l := range pm.log {
		count[l]++
	}
	for _, want := range []string{"fullinit map[pmijobid:7.0 pmirank:1 threaded:FALSE]", "job-getid map[]", "kvs-fence map[]",
		"kvs-get map[jobid:kvs_7;0 key:addr-0 srcid:-1]", "kvs-put map[key:addr-1 value:3ef]", "finalize map[]"} {
		if count[want] == 0 {
			t.Errorf("request %q not seen; log:\n%s", want, strings.Join(pm.log, "\n"))
		}
	}
}

// A process manager that answers the PMI-2 offer with version 1 gets a
// PMI-1 client; one that refuses or hangs up gives an error.
func TestNegotiate(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		version      int
	}{
		{"pmi1", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\ncmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n" +
			"cmd=appnum appnum=-1\ncmd=my_kvsname kvsname=kvs_1\n", 1}, // Slurm's appnum
		{"refused", "cmd=response_to_init rc=-1 msg=no\n", 0},
		{"version 3", "cmd=response_to_init pmi_version=3 rc=0\n", 0},
		{"hang up", "", 0},
		{"bad frame", "cmd=response_to_init pmi_version=2 rc=0\n   x12cmd=fullinit-response;", 0},
		{"wrong rank", "cmd=response_to_init pmi_version=2 rc=0\n" + string(EncodeCommand2("fullinit-response", "rank", "1", "size", "2", "rc", "0")), 0},
		{"fullinit rc", "cmd=response_to_init pmi_version=2 rc=0\n" + string(EncodeCommand2("fullinit-response", "rc", "3", "errmsg", "nope")), 0},
	} {
		a, b := net.Pipe()
		go func() {
			go io.Copy(io.Discard, b)
			b.Write([]byte(c.answer))
			if c.version == 0 {
				b.Close()
			}
		}()
		cl, err := Negotiate(a, 0, 1, "")
		switch {
		case c.version == 0 && err == nil:
			t.Errorf("%s: accepted", c.name)
		case c.version != 0 && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.version != 0 && cl.Version() != c.version:
			t.Errorf("%s: version %d, want %d", c.name, cl.Version(), c.version)
		}
		a.Close()
		b.Close()
	}
}

func TestParseCommand2(t *testing.T) {
	r, err := ParseCommand2("cmd=kvs-get-response;found=TRUE;value=a=b;;c;;;rc=0;")
	if err != nil || r.Cmd != "kvs-get-response" || r.Attrs["value"] != "a=b;c;" || r.Attrs["rc"] != "0" || len(r.Attrs) != 3 {
		t.Errorf("got %+v, %v", r, err)
	}
	if r, err := ParseCommand2("cmd=finalize-response;rc=0"); err != nil || r.Attrs["rc"] != "0" {
		t.Errorf("without the final ';': %+v, %v", r, err)
	}
	for _, bad := range []string{"", ";", "rc=0;cmd=x;", "cmd=;", "cmd=a;b;", "cmd=a;=b;", "cmd=a;k=1;k=2;", "cmd=a;cmd=b;", "cmd=a\x00;", "cmd=a;k\n=1;"} {
		if _, err := ParseCommand2(bad); !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: %v, want ErrProtocol", bad, err)
		}
	}
	for _, bad := range []string{"", "   ", "    5cmd=", "-00001cmd=a;", "  +1cmd=a;", "99999999", "abcdef"} {
		if _, _, err := DecodeFrame2([]byte(bad)); !errors.Is(err, ErrProtocol) {
			t.Errorf("frame %q: %v, want ErrProtocol", bad, err)
		}
	}
	// Slurm pads the length on the right
	body := "cmd=kvs-fence-response;rc=0;"
	if r, n, err := DecodeFrame2([]byte(fmt.Sprintf("%-6d", len(body)) + body)); err != nil || n != 6+len(body) || r.Cmd != "kvs-fence-response" {
		t.Errorf("left-justified length: %+v, %d, %v", r, n, err)
	}
	f := EncodeCommand2("kvs-put", "key", "k", "value", "x;y")
	if string(f) != "    29cmd=kvs-put;key=k;value=x;;y;" {
		t.Errorf("frame %q", f)
	}
}

// FuzzDecodeFrame2: no input panics; what decodes has a command, keys
// without ';' or '=', takes no more than the input, and encodes back to a
// frame that decodes to the same command and attributes.
func FuzzDecodeFrame2(f *testing.F) {
	for _, s := range []string{
		string(EncodeCommand2("fullinit-response", "rank", "0", "size", "4", "appnum", "0", "rc", "0")),
		string(EncodeCommand2("kvs-get-response", "found", "TRUE", "value", "ab;;cd", "rc", "0")),
		"    23cmd=kvs-fence-response;", "     0", "    10cmd=a;b=c", "000004cmd=", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, n, err := DecodeFrame2(b)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not wrap ErrProtocol", err)
			}
			return
		}
		if n > len(b) || r.Cmd == "" {
			t.Fatalf("took %d of %d bytes, command %q", n, len(b), r.Cmd)
		}
		var kv []string
		for k, v := range r.Attrs {
			if k == "" || k == "cmd" || strings.ContainsAny(k, ";=") {
				t.Fatalf("key %q from %q", k, b)
			}
			kv = append(kv, k, v)
		}
		if strings.Contains(r.Cmd, ";") {
			return // a command name cannot be escaped
		}
		r2, _, err := DecodeFrame2(EncodeCommand2(r.Cmd, kv...))
		if err != nil || r2.Cmd != r.Cmd || fmt.Sprint(r2.Attrs) != fmt.Sprint(r.Attrs) {
			t.Fatalf("re-encoded %+v decodes to %+v, %v", r, r2, err)
		}
	})
}
