package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ucgo/ucgo/ucp"
	"github.com/ucgo/ucgo/uct"
)

func init() {
	childRoles["worldkill"] = worldKillChild
}

// worldKillChild: a world of three in the peer error mode; rank 2 dies by
// SIGKILL once every rank posted a receive from each other rank. The
// survivors check that the rank in the tag tells the worker which
// receives only the dead rank could match: its receive is told of the
// failure and completes with the peer-failed status at Purge, while the
// receive from the other survivor is not told and later matches.
func worldKillChild() error {
	Supervise()
	failed := make(chan int, 4)
	w, err := Start(WorldOptions{
		Eager:        true,
		Config:       ucp.Config{ErrorMode: ucp.ErrorModePeer},
		ErrorHandler: func(rank int, _ *ucp.Endpoint, _ error) { failed <- rank },
	})
	if err != nil {
		return err
	}
	me := w.Rank()
	other := 1 - me // the other survivor
	var fromDead, fromOther *ucp.Request
	if me != 2 {
		fromDead = w.Worker.TagRecv(make([]byte, 8), Tag(2, 9), Exact, nil)
		fromOther = w.Worker.TagRecv(make([]byte, 8), Tag(other, 9), Exact, nil)
	}
	if err := w.Barrier(); err != nil { // the receives are posted
		return err
	}
	if me == 2 {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for len(failed) == 0 {
		if ctx.Err() != nil {
			return fmt.Errorf("rank %d: rank 2's death not seen", me)
		}
		if w.Worker.Progress() == 0 {
			c, cc := context.WithTimeout(ctx, 20*time.Millisecond)
			w.Worker.Wait(c)
			cc()
		}
	}
	if r := <-failed; r != 2 {
		return fmt.Errorf("rank %d: rank %d failed, want 2", me, r)
	}
	if done, err := fromDead.Test(); done || !errors.Is(err, ucp.ErrProcFailedPending) {
		return fmt.Errorf("rank %d: receive from the dead rank: done %v, %v; want told ErrProcFailedPending", me, done, err)
	}
	// The other survivor may have purged and sent already: its message
	// may have matched before this rank saw the failure, or wait.
	if _, err := fromOther.Test(); err != nil {
		return fmt.Errorf("rank %d: receive from rank %d: %v; want no failure notice", me, other, err)
	}
	dead, err := w.EP(2)
	if err != nil {
		return err
	}
	w.Worker.Purge(dead)
	if err := fromDead.Wait(ctx); !errors.Is(err, uct.ErrPeerFailed) {
		return fmt.Errorf("rank %d: receive from the dead rank after Purge: %v, want peer failed", me, err)
	}
	ep, err := w.EP(other)
	if err != nil {
		return err
	}
	// A synchronous send completes once the other survivor received it,
	// so neither exits before the other has its message; the other may
	// exit before this send learns it completed.
	sent := ep.TagSendSync([]byte(fmt.Sprint("from ", me)), Tag(me, 9), nil)
	if err := fromOther.Wait(ctx); err != nil {
		return err
	}
	if err := sent.Wait(ctx); err != nil && !errors.Is(err, uct.ErrPeerFailed) {
		return err
	}
	fmt.Printf("rank %d: rank 2 failed; its receive was told and purged; rank %d's matched\n", me, other)
	return errors.Join(w.Worker.Close(), w.Context.Close(), w.PM.Close())
}

// A world under mpiexec -disable-auto-cleanup in both protocol versions:
// its endpoints carry the ranks as source tags, so a dead rank's failure
// reaches exactly the receives that name it.
func TestMPIExecWorldKill(t *testing.T) {
	for _, v := range []string{"1", "2"} {
		t.Run("pmi"+v, func(t *testing.T) {
			// mpiexec's exit status reflects the killed rank only at
			// times; the survivors' reports are what counts
			out, err := mpiexec(t, 3, "worldkill", 2*time.Minute, []string{"-disable-auto-cleanup"}, "UCGO_PMI="+v)
			if strings.Contains(string(out), "bootstrap child:") {
				t.Fatalf("mpiexec: %v, a survivor failed:\n%s", err, out)
			}
			for r := 0; r < 2; r++ {
				if want := fmt.Sprintf("rank %d: rank 2 failed; its receive was told and purged; rank %d's matched\n", r, 1-r); !strings.Contains(string(out), want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
		})
	}
}
