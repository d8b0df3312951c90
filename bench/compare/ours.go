package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// oursRunner runs bench/perftest in local mode (-l: it starts both sides
// itself; for rc as root, in two network namespaces).
type oursRunner struct {
	path    string
	timeout time.Duration
	launch  *launcher
	// unavailable maps "test" and "x:transport" names that perftest -list
	// marks as not available in this build to the mark.
	unavailable map[string]string
}

// buildPerftest builds bench/perftest into dir with the go command; the
// current directory must be inside the ucgo module.
func buildPerftest(dir string) (string, error) {
	exe := filepath.Join(dir, "perftest")
	cmd := exec.Command("go", "build", "-o", exe, "github.com/ucgo/ucgo/bench/perftest")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build bench/perftest (run compare from the ucgo module, or pass -perftest): %w\n%s", err, out)
	}
	return exe, nil
}

func newOursRunner(path string, timeout time.Duration) (*oursRunner, error) {
	out, err := exec.Command(path, "-list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s -list: %w", path, err)
	}
	r := &oursRunner{path: path, timeout: timeout, launch: &launcher{}, unavailable: map[string]string{}}
	section := ""
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " ") {
			section = strings.TrimSuffix(line, ":")
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		_, mark, ok := strings.Cut(line, "[")
		if !ok {
			continue
		}
		mark = strings.TrimSuffix(strings.TrimSpace(mark), "]")
		switch section {
		case "tests":
			r.unavailable[f[0]] = mark
		case "transports":
			r.unavailable["x:"+f[0]] = mark
		}
	}
	return r, nil
}

// available says why ours cannot run test t over transport tr ("" if it can).
func (r *oursRunner) available(t *testMap, tr *transportMap) string {
	if m := r.unavailable["x:"+tr.oursName()]; m != "" {
		return "ucgo " + tr.oursName() + ": " + m
	}
	if m := r.unavailable[t.name]; m != "" {
		return "ucgo " + t.name + ": " + m
	}
	return ""
}

// limitError says whether a message of perftest means the size is beyond
// the transport's limit, which no second run changes.
func limitError(msg string) bool { return strings.Contains(msg, "exceeds the iface's limit") }

// oursResult is one line of perftest --json.
type oursResult struct {
	Test      string `json:"test"`
	Transport string `json:"transport"`
	Size      int    `json:"size"`
	figures
}

// run runs one test at one size, for at most r.timeout.
func (r *oursRunner) run(ctx context.Context, t *testMap, tr *transportMap, size, iters, warmup, window int) (figures, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	args := []string{"-l", "-t", t.name, "-x", tr.oursName(), "-s", strconv.Itoa(size),
		"-n", strconv.Itoa(iters), "-w", strconv.Itoa(warmup), "-O", strconv.Itoa(window), "--json"}
	cmd, err := r.launch.command(ctx, r.path, args...)
	if err != nil {
		return figures{}, err
	}
	if len(tr.oursEnv) > 0 {
		cmd.Env = append(os.Environ(), tr.oursEnv...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		return figures{}, fmt.Errorf("perftest %s: %w", strings.Join(args, " "), runEnded(ctx, r.timeout))
	}
	if err != nil {
		// perftest's own message ("perftest: ...") rather than the log
		// lines before it.
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndex(msg, "perftest: "); i >= 0 && (i == 0 || msg[i-1] == '\n') {
			msg = msg[i+len("perftest: "):]
		}
		if msg == "" {
			msg = err.Error()
		}
		return figures{}, errors.New(msg)
	}
	var res oursResult
	for _, line := range bytes.Split(stdout.Bytes(), []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		if err := json.Unmarshal(line, &res); err != nil {
			return figures{}, fmt.Errorf("perftest output %q: %w", line, err)
		}
	}
	if res.Size != size {
		return figures{}, fmt.Errorf("perftest printed no result for size %d: %s", size, strings.TrimSpace(stdout.String()+stderr.String()))
	}
	return res.figures, nil
}
