package reliability

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Op is what the sender records of one request.
type Op struct {
	Kind  Kind
	Done  int   // completions seen (exactly 1 is right)
	Err   error // the status of the first completion
	Stamp time.Time
}

// Kind is an operation of the traffic generator.
type Kind uint8

const (
	TagEager Kind = iota
	TagRndv
	AM
	AMRndv
	Put
	Get
	Atomic
	NumKinds
)

var kindNames = [...]string{TagEager: "tag-eager", TagRndv: "tag-rndv", AM: "am", AMRndv: "am-rndv", Put: "put", Get: "get", Atomic: "atomic"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Row is one scenario's line of the table. A duration below zero was not
// measured (the event did not happen) and prints as "-": Detect, no
// failover event or endpoint failure after the fault; Failover, no
// request completed after that; Failback, the traffic did not leave its
// lane, was back on it before the fault was removed, or did not come back
// within the scenario's bound.
type Row struct {
	Scenario   string
	Sent       int
	Delivered  int
	Lost       int
	Duplicated int
	Reordered  int
	Corrupt    int
	// Completions counts requests that completed other than exactly once.
	Completions int
	// Failed counts requests that completed with an error.
	Failed                     int
	Detect, Failover, Failback time.Duration
	// Path says whether a path to the peer remained: then nothing may be
	// lost, failed, duplicated or reordered.
	Path bool
}

func dur(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return d.Round(100 * time.Microsecond).String()
}

// Header is the table's header line.
func Header() string {
	return fmt.Sprintf("%-14s %8s %9s %6s %5s %7s %7s %6s %6s %10s %10s %10s",
		"scenario", "sent", "delivered", "lost", "dup", "reorder", "corrupt", "failed", "!once", "detect", "failover", "failback")
}

func (r Row) String() string {
	return fmt.Sprintf("%-14s %8d %9d %6d %5d %7d %7d %6d %6d %10s %10s %10s",
		r.Scenario, r.Sent, r.Delivered, r.Lost, r.Duplicated, r.Reordered, r.Corrupt, r.Failed, r.Completions,
		dur(r.Detect), dur(r.Failover), dur(r.Failback))
}

// Problems lists what the row breaks: every request must complete
// exactly once; where a path remains nothing may be lost, duplicated,
// reordered, corrupted or failed; nothing may ever be duplicated or
// corrupted.
func (r Row) Problems() []string {
	var p []string
	if r.Completions != 0 {
		p = append(p, fmt.Sprintf("%d requests did not complete exactly once", r.Completions))
	}
	if r.Duplicated != 0 {
		p = append(p, fmt.Sprintf("%d duplicated", r.Duplicated))
	}
	if r.Corrupt != 0 {
		p = append(p, fmt.Sprintf("%d corrupted", r.Corrupt))
	}
	if r.Sent == 0 {
		p = append(p, "nothing sent")
	}
	if r.Path {
		if r.Lost != 0 {
			p = append(p, fmt.Sprintf("%d lost", r.Lost))
		}
		if r.Reordered != 0 {
			p = append(p, fmt.Sprintf("%d reordered", r.Reordered))
		}
		if r.Failed != 0 {
			p = append(p, fmt.Sprintf("%d requests failed", r.Failed))
		}
	}
	return p
}

// Table prints the header and the rows.
func Table(w io.Writer, rows []Row) {
	var b strings.Builder
	b.WriteString(Header() + "\n")
	for _, r := range rows {
		b.WriteString(r.String() + "\n")
	}
	io.WriteString(w, b.String())
}
