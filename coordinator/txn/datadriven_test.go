package txn

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rewrite regenerates the expected output of testdata files:
//
//	go test ./coordinator/txn/ -run TestDataDriven -rewrite
var rewrite = flag.Bool("rewrite", false, "rewrite testdata golden output")

// ddCommand is one command of a golden file: a command line, "----", then
// the output up to a blank line.
type ddCommand struct {
	line     int
	name     string
	args     map[string]string
	order    []string
	comments []string
	want     string
}

func readDD(t *testing.T, path string) (cmds []ddCommand, trailing []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var comments []string
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		switch {
		case l == "":
			continue
		case strings.HasPrefix(l, "#"):
			comments = append(comments, lines[i])
			continue
		}
		c := ddCommand{line: i + 1, args: map[string]string{}, comments: comments}
		comments = nil
		f := strings.Fields(l)
		c.name = f[0]
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			c.args[k] = v
			c.order = append(c.order, k)
		}
		if i++; i >= len(lines) || strings.TrimSpace(lines[i]) != "----" {
			t.Fatalf("%s:%d: want ---- after the command", path, c.line)
		}
		var out []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			out = append(out, lines[i])
		}
		c.want = strings.Join(out, "\n")
		cmds = append(cmds, c)
	}
	return cmds, comments
}

// TestDataDriven runs testdata/*.txt: transaction scenarios against a
// coordinator with a fake clock, fake markers and memory logs.
//
// Commands (pid and epoch default to the last ones init answered for id):
//
//	init id= [timeout=ms] [v=5] [pid= epoch=]   InitProducerId
//	add id= parts=t/0,t/1 [v=3] [pid=] [epoch=] AddPartitionsToTxn
//	verify-only id= parts= [pid=] [epoch=]      AddPartitionsToTxn v4 verify_only
//	offsets id= part=N [v=3]                    AddOffsetsToTxn (__consumer_offsets-N)
//	end id= commit|abort [v=3]                  EndTxn
//	verify id= part=t/0                         VerifyProduce
//	fail-markers parts=t/1 [rounds=N]           the next N rounds (default all) fail those
//	advance d=10s                               move the clock, run due deadlines
//	state id=                                   the id's state
//	markers                                     marker calls since the last markers
//	restart                                     a new coordinator over the same logs
func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cmds, trailing := readDD(t, path)
			r := &ddRunner{
				e: newEnv(t, func(o *Options) {
					o.AbortTimedOutInterval = 10 * time.Second
					o.RemoveExpiredInterval = time.Minute
					o.IDExpiration = time.Hour
				}),
				producers: map[string][2]int64{},
			}
			var b strings.Builder
			for _, c := range cmds {
				got := strings.TrimRight(r.run(t, &c), "\n")
				if got == "" {
					got = "ok"
				}
				for _, cm := range c.comments {
					b.WriteString(cm + "\n")
				}
				b.WriteString(c.name)
				for _, k := range c.order {
					if v := c.args[k]; v != "" {
						fmt.Fprintf(&b, " %s=%s", k, v)
					} else {
						fmt.Fprintf(&b, " %s", k)
					}
				}
				b.WriteString("\n----\n" + got + "\n\n")
				if !*rewrite && got != c.want {
					t.Errorf("%s:%d: %s\nwant:\n%s\ngot:\n%s", path, c.line, c.name, c.want, got)
				}
			}
			for _, cm := range trailing {
				b.WriteString(cm + "\n")
			}
			if *rewrite {
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

type ddRunner struct {
	e           *env
	producers   map[string][2]int64 // id -> last pid, epoch from init
	markersSeen int
}

func codeName(code int16) string {
	if code == 0 {
		return "OK"
	}
	return kerr.ErrorForCode(code).(*kerr.Error).Message
}

func parseTP(t *testing.T, s string) TopicPartition {
	t.Helper()
	topic, p, ok := strings.Cut(s, "/")
	n, err := strconv.Atoi(p)
	if !ok || err != nil {
		t.Fatalf("bad partition %q", s)
	}
	return TopicPartition{Topic: topic, Partition: int32(n)}
}

func (r *ddRunner) intArg(t *testing.T, c *ddCommand, k string, def int64) int64 {
	t.Helper()
	v, ok := c.args[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%d: %s=%q: %v", c.line, k, v, err)
	}
	return n
}

// producer is the pid and epoch a command names: pid=/epoch= or the last
// init's answer.
func (r *ddRunner) producer(t *testing.T, c *ddCommand) (string, int64, int16) {
	id := c.args["id"]
	last := r.producers[id]
	return id, r.intArg(t, c, "pid", last[0]), int16(r.intArg(t, c, "epoch", last[1]))
}

func (r *ddRunner) run(t *testing.T, c *ddCommand) string {
	e := r.e
	ctx := t.Context()
	switch c.name {
	case "init":
		id := c.args["id"]
		resp := e.initReq(int16(r.intArg(t, c, "v", 5)), id, int32(r.intArg(t, c, "timeout", 60000)), r.intArg(t, c, "pid", -1), int16(r.intArg(t, c, "epoch", -1)))
		if resp.ErrorCode != 0 {
			return codeName(resp.ErrorCode)
		}
		r.producers[id] = [2]int64{resp.ProducerID, int64(resp.ProducerEpoch)}
		return fmt.Sprintf("pid=%d epoch=%d", resp.ProducerID, resp.ProducerEpoch)
	case "add", "verify-only":
		id, pid, epoch := r.producer(t, c)
		var tps []TopicPartition
		for _, s := range strings.Split(c.args["parts"], ",") {
			tps = append(tps, parseTP(t, s))
		}
		var codes map[TopicPartition]int16
		if c.name == "add" {
			codes = e.add(int16(r.intArg(t, c, "v", 3)), id, pid, epoch, tps...)
		} else {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.Version = 4
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, true
			for _, tp := range tps {
				rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
				tx.Topics = append(tx.Topics, rt)
			}
			req.Transactions = append(req.Transactions, tx)
			codes = map[TopicPartition]int16{}
			for _, rt := range e.c.AddPartitionsToTxn(ctx, req).Transactions[0].Topics {
				for _, p := range rt.Partitions {
					codes[TopicPartition{Topic: rt.Topic, Partition: p.Partition}] = p.ErrorCode
				}
			}
		}
		var out []string
		for _, tp := range tps {
			out = append(out, fmt.Sprintf("%s: %s", tp, codeName(codes[tp])))
		}
		return strings.Join(out, "\n")
	case "offsets":
		id, pid, epoch := r.producer(t, c)
		return codeName(e.addOffsets(int16(r.intArg(t, c, "v", 3)), id, pid, epoch, tp("__consumer_offsets", int32(r.intArg(t, c, "part", 0)))))
	case "end":
		id, pid, epoch := r.producer(t, c)
		_, commit := c.args["commit"]
		return codeName(e.end(int16(r.intArg(t, c, "v", 3)), id, pid, epoch, commit).ErrorCode)
	case "verify":
		id, pid, epoch := r.producer(t, c)
		return codeName(e.c.VerifyProduce(ctx, id, pid, epoch, parseTP(t, c.args["part"])))
	case "fail-markers":
		failing := map[TopicPartition]bool{}
		for _, s := range strings.Split(c.args["parts"], ",") {
			failing[parseTP(t, s)] = true
		}
		e.markers.mu.Lock()
		until := len(e.markers.calls) + int(r.intArg(t, c, "rounds", 1<<30))
		e.markers.fail = func(call int, tp TopicPartition) int16 {
			if call < until && failing[tp] {
				return kerr.NotLeaderForPartition.Code
			}
			return 0
		}
		e.markers.mu.Unlock()
		return ""
	case "advance":
		d, err := time.ParseDuration(c.args["d"])
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(d)
		e.tick()
		r.settle(t)
		return ""
	case "state":
		id := c.args["id"]
		m, pending := e.meta(id)
		if m == nil {
			return "unknown"
		}
		var parts []string
		for _, tp := range m.sortedPartitions() {
			parts = append(parts, tp.String())
		}
		s := fmt.Sprintf("%v pid=%d epoch=%d partitions=[%s]", m.state, m.producerID, m.epoch, strings.Join(parts, " "))
		if m.startMs >= 0 {
			s += fmt.Sprintf(" started=%s", time.UnixMilli(m.startMs).Sub(testClockStart))
		}
		if pending {
			s += " markers-pending"
		}
		return s
	case "markers":
		calls := e.markers.callList()
		var out []string
		for _, mc := range calls[r.markersSeen:] {
			kind := "abort"
			if mc.commit {
				kind = "commit"
			}
			var parts []string
			for _, tp := range mc.partitions {
				parts = append(parts, tp.String())
			}
			out = append(out, fmt.Sprintf("%s pid=%d epoch=%d [%s]", kind, mc.producerID, mc.epoch, strings.Join(parts, " ")))
		}
		r.markersSeen = len(calls)
		if len(out) == 0 {
			return "none"
		}
		return strings.Join(out, "\n")
	case "restart":
		e.c.Close()
		e.start()
		r.settle(t)
		return ""
	}
	t.Fatalf("%d: unknown command %q", c.line, c.name)
	return ""
}

// settle waits until no marker round is in flight, so that the output
// does not depend on goroutine timing.
func (r *ddRunner) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		busy := false
		for _, s := range r.e.c.shardList() {
			s.call(t.Context(), func() {
				for _, p := range s.pending {
					busy = busy || p.inFlight
				}
			})
		}
		if !busy {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("marker rounds did not settle")
		}
		runtime.Gosched() // let the marker goroutines report
	}
}
