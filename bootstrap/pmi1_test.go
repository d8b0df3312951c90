package bootstrap

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
)

// fakePM is a PMI-1 process manager for n ranks over in-memory pipes.
type fakePM struct {
	n       int
	mu      sync.Mutex
	kvs     map[string]string
	waiting []net.Conn
	log     []string
}

func (f *fakePM) serve(t *testing.T, c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	reply := func(c net.Conn, s string) { fmt.Fprintf(c, "%s\n", s) }
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		f.mu.Lock()
		f.log = append(f.log, line)
		f.mu.Unlock()
		kv := map[string]string{}
		for _, fld := range strings.Fields(line) {
			k, v, _ := strings.Cut(fld, "=")
			kv[k] = v
		}
		switch kv["cmd"] {
		case "init":
			reply(c, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0")
		case "get_maxes":
			reply(c, "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024")
		case "get_appnum":
			reply(c, "cmd=appnum appnum=0")
		case "get_my_kvsname":
			reply(c, "cmd=my_kvsname kvsname=kvs_42_0")
		case "put":
			f.mu.Lock()
			f.kvs[kv["key"]] = kv["value"]
			f.mu.Unlock()
			reply(c, "cmd=put_result rc=0 msg=success")
		case "get":
			f.mu.Lock()
			v, ok := f.kvs[kv["key"]]
			f.mu.Unlock()
			if ok {
				reply(c, "cmd=get_result rc=0 msg=success value="+v)
			} else {
				reply(c, "cmd=get_result rc=-1 msg=key_"+kv["key"]+"_not_found")
			}
		case "barrier_in":
			f.mu.Lock()
			f.waiting = append(f.waiting, c)
			if len(f.waiting) == f.n {
				for _, w := range f.waiting {
					reply(w, "cmd=barrier_out")
				}
				f.waiting = nil
			}
			f.mu.Unlock()
		case "finalize":
			reply(c, "cmd=finalize_ack")
			return
		default:
			t.Errorf("fake PM: unknown request %q", line)
			return
		}
	}
}

// Two clients against the fake process manager: the wire requests are the
// PMI-1 ones and values cross the barrier.
func TestFakeServer(t *testing.T) {
	pm := &fakePM{n: 2, kvs: map[string]string{}}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	vals := make([][2]string, 2)
	for rank := 0; rank < 2; rank++ {
		a, b := net.Pipe()
		go pm.serve(t, b)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[rank] = func() error {
				c, err := NewPMI1(a, rank, 2)
				if err != nil {
					return err
				}
				if c.KVS() != "kvs_42_0" || c.MaxKey() != 64 || c.MaxValue() != 923 || c.maxKVSName != 256 || c.AppNum() != 0 || c.Version() != 1 {
					return fmt.Errorf("client state %+v", c)
				}
				if err := c.Put(fmt.Sprintf("addr-%d", rank), fmt.Sprintf("%x", rank*1000+7)); err != nil {
					return err
				}
				if err := c.Barrier(); err != nil {
					return err
				}
				for r := 0; r < 2; r++ {
					if vals[rank][r], err = c.Get(fmt.Sprintf("addr-%d", r)); err != nil {
						return err
					}
				}
				if _, err := c.Get("missing"); err == nil || !strings.Contains(err.Error(), "rc=-1") {
					return fmt.Errorf("get of a missing key: %v", err)
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
		if vals[rank] != [2]string{"7", "3ef"} {
			t.Errorf("rank %d read %q", rank, vals[rank])
		}
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	count := map[string]int{}
	for _, l := range pm.log {
		count[l]++
	}
	for _, want := range []string{"cmd=init pmi_version=1 pmi_subversion=1", "cmd=get_maxes", "cmd=get_appnum",
		"cmd=get_my_kvsname", "cmd=barrier_in", "cmd=finalize", "cmd=get kvsname=kvs_42_0 key=addr-1"} {
		if count[want] != 2 {
			t.Errorf("request %q seen %d times, want 2; log:\n%s", want, count[want], strings.Join(pm.log, "\n"))
		}
	}
	if count["cmd=put kvsname=kvs_42_0 key=addr-1 value=3ef"] != 1 {
		t.Errorf("put of rank 1 missing; log:\n%s", strings.Join(pm.log, "\n"))
	}
}

// A process manager that answers wrongly or hangs up gives errors.
func TestBadServer(t *testing.T) {
	for _, c := range []struct {
		name, answer string
		protocol     bool
	}{
		{"wrong cmd", "cmd=maxes kvsname_max=1\n", true},
		{"bad rc", "cmd=response_to_init rc=-3 msg=nope\n", false},
		{"no cmd", "rc=0\n", true},
		{"version 2", "cmd=response_to_init pmi_version=2 rc=0\n", true},
		{"hang up", "", false},
	} {
		a, b := net.Pipe()
		go func() {
			r := bufio.NewReader(b)
			r.ReadString('\n')
			b.Write([]byte(c.answer))
			b.Close()
		}()
		_, err := NewPMI1(a, 0, 1)
		if err == nil || c.protocol != errors.Is(err, ErrProtocol) {
			t.Errorf("%s: got %v (protocol error wanted: %t)", c.name, err, c.protocol)
		}
	}
	if _, err := NewPMI1(nil, 2, 2); err == nil {
		t.Error("rank 2 of 2 accepted")
	}
}

func TestParseResponse(t *testing.T) {
	r, err := ParseResponse("cmd=get_result rc=0 msg=success value=a=b\n")
	if err != nil || r.Cmd != "get_result" || r.Attrs["value"] != "a=b" || r.Attrs["rc"] != "0" || len(r.Attrs) != 3 {
		t.Errorf("got %+v, %v", r, err)
	}
	for _, bad := range []string{"", "\n", "rc=0 cmd=x", "cmd=", "cmd=a b", "cmd=a =b", "cmd=a k=1 k=2", "cmd=a cmd=b", "cmd=a\x00"} {
		if _, err := ParseResponse(bad); !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: %v, want ErrProtocol", bad, err)
		}
	}
}

// FuzzParseResponse: no input panics; what parses has a command and only
// keys without spaces.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{
		"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n",
		"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n",
		"cmd=get_result rc=0 msg=success value=00ff==\n",
		"cmd=barrier_out\n", "cmd=get_result rc=-1 msg=key_x_not_found\n", "cmd= x\n", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, err := ParseResponse(line)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not wrap ErrProtocol", err)
			}
			return
		}
		if r.Cmd == "" || strings.ContainsAny(r.Cmd, " \t\n") {
			t.Fatalf("command %q from %q", r.Cmd, line)
		}
		for k := range r.Attrs {
			if k == "" || k == "cmd" || strings.ContainsAny(k, " \t\n=") {
				t.Fatalf("key %q from %q", k, line)
			}
		}
		_ = r.rc()
	})
}
