package systests

import (
	"strconv"
	"testing"
)

// CopierOptions configures a TransactionalMessageCopier, as
// transactional_message_copier.py and transactions_utils.py do.
type CopierOptions struct {
	TransactionalID string
	Group           string
	InputTopic      string
	InputPartition  int
	OutputTopic     string
	// TransactionSize is the records per transaction (750 in
	// transactions_test.py).
	TransactionSize int
	// TransactionTimeoutMS (40000 in transactions_test.py).
	TransactionTimeoutMS int
	// NoRandomAborts turns off --enable-random-aborts (on in the service).
	NoRandomAborts   bool
	UseGroupMetadata bool
	// GroupMode subscribes to the input topic instead of assigning one
	// partition (group_mode_transactions_test.py).
	GroupMode bool
}

// Copier is a running TransactionalMessageCopier and its progress.
type Copier struct {
	proc
	consumed, remaining int64
	finished            bool
	shutdowns           int
}

// StartCopier starts a TransactionalMessageCopier.
func (tl *Tools) StartCopier(t testing.TB, name string, o CopierOptions) *Copier {
	t.Helper()
	args := []string{"--broker-list", tl.bootstrap, "--transactional-id", o.TransactionalID,
		"--consumer-group", o.Group, "--input-topic", o.InputTopic, "--output-topic", o.OutputTopic,
		"--input-partition", strconv.Itoa(o.InputPartition),
		"--transaction-size", strconv.Itoa(cmpOr(o.TransactionSize, 750)),
		"--transaction-timeout", strconv.Itoa(cmpOr(o.TransactionTimeoutMS, 40000))}
	if !o.NoRandomAborts {
		args = append(args, "--enable-random-aborts")
	}
	if o.UseGroupMetadata {
		args = append(args, "--use-group-metadata")
	}
	if o.GroupMode {
		args = append(args, "--group-mode")
	}
	c := &Copier{consumed: -1, remaining: -1}
	c.proc = proc{name: name, tools: tl, class: "org.apache.kafka.tools.TransactionalMessageCopier", args: args, handle: c.handle}
	c.start(t)
	return c
}

// handle is transactional_message_copier.py's _worker loop body: the copy
// is finished only when a ShutdownComplete reports nothing remaining.
// REQUIRES: c.mu held
func (c *Copier) handle(_ string, ev map[string]any) {
	c.remaining, c.consumed = num(ev, "remaining"), num(ev, "consumed")
	if str(ev, "stage") == "ShutdownComplete" {
		c.shutdowns++
		if c.remaining == 0 {
			c.finished = true
		}
	}
}

// Done reports whether the copier finished copying everything.
func (c *Copier) Done() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finished
}

// Progress is the percentage copied in the current run (progress_percent).
func (c *Copier) Progress() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.remaining < 0 {
		return 0
	}
	if c.consumed+c.remaining == 0 {
		return 100
	}
	return float64(c.consumed) * 100 / float64(c.consumed+c.remaining)
}

// Restart stops the copier (SIGTERM or SIGKILL) and starts it again,
// unless it is done (restart in the service).
func (c *Copier) Restart(t testing.TB, clean bool) {
	t.Helper()
	if c.Done() {
		return
	}
	c.mu.Lock()
	c.consumed, c.remaining = -1, -1
	c.mu.Unlock()
	c.stop(t, clean)
	c.start(t)
}
