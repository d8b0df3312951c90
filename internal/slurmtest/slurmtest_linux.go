package slurmtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Cluster is a running one-node Slurm cluster.
type Cluster struct {
	dir  string
	conf string
	env  []string
}

var daemons = []string{"munged", "slurmctld", "slurmd", "srun", "sinfo"}

// freePort returns a TCP port nobody listens on now.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts the cluster with cpus CPUs on its one node, or skips the
// test.
func Start(t testing.TB, cpus int) *Cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a Slurm cluster needs root")
	}
	for _, d := range daemons {
		if _, err := exec.LookPath(d); err != nil {
			t.Skipf("%s not installed (Debian packages munge, slurmctld, slurmd, slurm-client)", d)
		}
	}
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	dir, err := os.MkdirTemp("", "ucgo-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, sub := range []string{"state", "spool", "munge"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cluster{dir: dir, conf: filepath.Join(dir, "slurm.conf")}
	c.env = append(os.Environ(), "SLURM_CONF="+c.conf)

	key := make([]byte, 1024)
	rand.Read(key)
	keyFile := filepath.Join(dir, "munge", "munge.key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "munge", "munge.socket")
	c.daemon(t, "munged", "--foreground", "--force", "--socket="+socket, "--key-file="+keyFile,
		"--pid-file="+filepath.Join(dir, "munge", "munged.pid"), "--log-file="+filepath.Join(dir, "munge", "munged.log"),
		"--seed-file="+filepath.Join(dir, "munge", "munged.seed"))
	conf := fmt.Sprintf(`ClusterName=ucgotest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[2]s
CredType=cred/munge
MpiDefault=pmi2
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd.pid
SlurmctldPort=%[4]d
SlurmdPort=%[5]d
SlurmctldLogFile=%[3]s/slurmctld.log
SlurmdLogFile=%[3]s/slurmd.log
SlurmdParameters=config_overrides
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[6]d State=UNKNOWN
PartitionName=test Nodes=%[1]s Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
`, host, socket, dir, freePort(t), freePort(t), cpus)
	if err := os.WriteFile(c.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "munged's socket", func() bool { _, err := os.Stat(socket); return err == nil })
	c.daemon(t, "slurmctld", "-D", "-i", "-f", c.conf)
	c.daemon(t, "slurmd", "-D", "-f", c.conf)
	c.waitFor(t, "the node to be idle", func() bool {
		out, err := c.command(context.Background(), "sinfo", "-h", "-o", "%t").Output()
		return err == nil && strings.TrimSpace(string(out)) == "idle"
	})
	return c
}

// daemon starts a daemon in the foreground, in its own process group,
// and kills it at cleanup.
func (c *Cluster) daemon(t testing.TB, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = c.env
	log, err := os.Create(filepath.Join(c.dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		log.Close()
	})
}

func (c *Cluster) waitFor(t testing.TB, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %s", what, c.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logs returns the daemons' logs, for a failure message.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, f := range []string{"munged.out", "slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log"} {
		data, _ := os.ReadFile(filepath.Join(c.dir, f))
		fmt.Fprintf(&b, "\n--- %s\n%s", f, data)
	}
	return b.String()
}

func (c *Cluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.env
	return cmd
}

// Srun runs "srun --mpi=pmi2 -O -n N args..." (-O lets N exceed the
// node's CPUs) with env added, and returns its combined output and exit
// code; it fails the test after limit.
func (c *Cluster) Srun(t testing.TB, n int, limit time.Duration, env []string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := c.command(ctx, "srun", append([]string{"--mpi=pmi2", "-O", "-n", fmt.Sprint(n)}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("srun %v did not finish in %v:\n%s%s", args, limit, out, c.logs())
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("srun: %v", err)
	return "", -1
}
