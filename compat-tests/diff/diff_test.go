package diff

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// samsaOverrides make samsa's static configuration match the reference
// Kafka's server.properties (kafka-ref.sh), so broker configs compare;
// harness.Options.ControllerListener adds the CONTROLLER listener,
// controller.listener.names and controller.quorum.voters.
var samsaOverrides = map[string]string{
	"process.roles":                                    "broker,controller",
	"listener.security.protocol.map":                   "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
	"inter.broker.listener.name":                       "PLAINTEXT",
	"num.partitions":                                   "1",
	"auto.create.topics.enable":                        "true",
	"offsets.topic.replication.factor":                 "1",
	"transaction.state.log.replication.factor":         "1",
	"transaction.state.log.min.isr":                    "1",
	"share.coordinator.state.topic.replication.factor": "1",
	"share.coordinator.state.topic.min.isr":            "1",
	"group.initial.rebalance.delay.ms":                 "0",
}

// TestDifferential runs Script against Apache Kafka 4.4 and against
// samsa, compares every answer field by field, and fails on a difference
// that compat-tests/FINDINGS.md does not explain, or on an explained one
// that no longer occurs. DIFF_KAFKA_ADDR / DIFF_SAMSA_ADDR point it at
// brokers already running (fresh ones: the script creates its topics).
func TestDifferential(t *testing.T) {
	explained, err := ReadExplained(filepath.Join("..", "FINDINGS.md"))
	if err != nil {
		t.Fatal(err)
	}
	kafkaAddr, samsaAddr := os.Getenv("DIFF_KAFKA_ADDR"), os.Getenv("DIFF_SAMSA_ADDR")
	start := time.Now()
	if kafkaAddr == "" {
		kafkaAddr = kafkaref.Start(t, kafkaref.Options{}).Bootstrap()
	}
	kafkaUp := time.Now()
	if samsaAddr == "" {
		samsaAddr = harness.Start(t, harness.Options{Overrides: samsaOverrides, ControllerListener: true}).Addr
	}
	samsaUp := time.Now()
	// Whole seconds, so the value is the same however it is printed.
	baseTS := time.Now().Truncate(time.Second).UnixMilli()
	sessions := map[string]*Session{}
	for name, addr := range map[string]string{"kafka": kafkaAddr, "samsa": samsaAddr} {
		s, err := NewSession(name, addr, baseTS)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sessions[name] = s
	}
	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	for name, s := range sessions {
		wg.Go(func() {
			err := Script(s)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	for name, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	t.Logf("Kafka start %v, samsa start %v, script %v", kafkaUp.Sub(start).Round(time.Second),
		samsaUp.Sub(kafkaUp).Round(time.Second), time.Since(samsaUp).Round(time.Second))
	for _, name := range []string{"kafka", "samsa"} {
		t.Logf("%s: slowest steps %s", name, slowest(sessions[name].Steps, 5))
	}
	for _, miss := range uncovered(sessions["samsa"].Steps) {
		t.Errorf("the script never sends %s, which samsa advertises", miss)
	}
	pairs, unmatched := Pairs(sessions["kafka"].Steps, sessions["samsa"].Steps)
	sum := Summarize(pairs, explained)
	t.Logf("differential suite against Kafka 4.4:\n%s", sum.Format())
	if p := os.Getenv("DIFF_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(sum.Format()+detail(pairs)+dump(pairs, os.Getenv("DIFF_DUMP"))), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, u := range unmatched {
		t.Errorf("%v: %s", ErrDiffScript, u)
	}
	if n := len(sum.Unexplained); n > 0 {
		t.Errorf("%d differences from Kafka 4.4 that compat-tests/FINDINGS.md does not explain (listed above)", n)
	}
	for _, e := range explained {
		if e.Used == 0 {
			t.Errorf("FINDINGS.md explains `%s`, which no longer occurs: remove it", e.Pattern)
		}
	}
}

// detail lists every difference of every pair, for DIFF_REPORT.
func detail(pairs []Pair) string {
	out := "\nall differences:\n"
	for _, p := range pairs {
		for _, d := range p.Diffs {
			out += "  " + p.Name + " " + d.Path + ": Kafka " + d.Kafka + ", samsa " + d.Samsa + "\n"
		}
	}
	return out
}

// dump prints both answers of every step whose name contains substr.
func dump(pairs []Pair, substr string) string {
	if substr == "" {
		return ""
	}
	out := "\nanswers of steps matching " + substr + ":\n"
	for _, p := range pairs {
		if strings.Contains(p.Name, substr) {
			out += fmt.Sprintf("  %s\n    Kafka: %s %+v\n    samsa: %s %+v\n", p.Name, p.Kafka.Outcome, p.Kafka.Resp, p.Samsa.Outcome, p.Samsa.Resp)
		}
	}
	return out
}

// uncovered lists the advertised API versions no step sent.
func uncovered(steps []Step) []string {
	sent := map[[2]int16]bool{}
	for _, st := range steps {
		sent[[2]int16{st.Key, st.Version}] = true
	}
	var out []string
	for key, r := range Advertised() {
		for v := r.Min; v <= r.Max; v++ {
			if !sent[[2]int16{key, v}] {
				out = append(out, fmt.Sprintf("%s v%d", kmsg.NameForKey(key), v))
			}
		}
	}
	sort.Strings(out)
	return out
}

// slowest names the n steps that took longest, with their durations.
func slowest(steps []Step, n int) string {
	sorted := append([]Step(nil), steps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Took > sorted[j].Took })
	var parts []string
	var total time.Duration
	for _, st := range steps {
		total += st.Took
	}
	for _, st := range sorted[:min(n, len(sorted))] {
		parts = append(parts, fmt.Sprintf("%s %v", st.Name, st.Took.Round(time.Millisecond)))
	}
	return fmt.Sprintf("(all recorded steps %v): %s", total.Round(time.Millisecond), strings.Join(parts, ", "))
}
