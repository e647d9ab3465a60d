// This file runs the Kafka Streams 4.4 word count (samsa.compat.StreamsWordCount:
// exactly_once_v2, a repartition topic, a persistent state store) with group.protocol=streams,
// the KIP-1071 streams rebalance protocol (StreamsGroupHeartbeat, the broker assigning tasks
// and creating the internal topics), against samsa and against Apache Kafka 4.4.0 the same
// way: two instances share the work; one is SIGKILLed mid-run and started again with an
// empty state directory (on samsa the broker is also restarted at the end: the group comes
// back from __consumer_offsets); the read_committed output must hold, for every word, the counts 1,
// 2, ..., n, each exactly once. StreamsGroupDescribe shows the group with both instances and
// every task active exactly once, and kafka-streams-groups (Kafka 4.4's StreamsGroupCommand)
// lists and describes it and, once both instances stopped, deletes it.

package compattests

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// streamsGroupSessionMs is group.streams.session.timeout.ms on both brokers: the killed
// instance's tasks move to the others once its session expires (Kafka's default 45 s, and its
// minimum, would make the test wait that long).
const streamsGroupSessionMs = "10000"

// TestJavaStreamsGroupProtocol runs the word count as a streams group against samsa and Kafka 4.4.
func TestJavaStreamsGroupProtocol(t *testing.T) {
	t.Parallel()
	cp := javaClasspath(t)
	t.Run("samsa", func(t *testing.T) {
		t.Parallel()
		b := harness.Start(t, harness.Options{Overrides: map[string]string{
			"log.cleaner.backoff.ms":                  "1000",
			"group.streams.min.session.timeout.ms":    streamsGroupSessionMs,
			"group.streams.session.timeout.ms":        streamsGroupSessionMs,
			"group.streams.min.heartbeat.interval.ms": "1000",
			"group.streams.heartbeat.interval.ms":     "1000",
		}})
		runStreamsGroupProtocol(t, cp, b.Addr, func() { b.Stop(t); b.Restart(t) })
	})
	t.Run("kafka", func(t *testing.T) {
		t.Parallel()
		k := kafkaref.Start(t, kafkaref.Options{Overrides: []string{
			"log.cleaner.backoff.ms=1000",
			"group.streams.min.session.timeout.ms=" + streamsGroupSessionMs,
			"group.streams.session.timeout.ms=" + streamsGroupSessionMs,
			"group.streams.min.heartbeat.interval.ms=1000",
			"group.streams.heartbeat.interval.ms=1000",
		}})
		runStreamsGroupProtocol(t, cp, k.Bootstrap(), nil)
	})
}

// describeStreamsGroup sends StreamsGroupDescribe for one group.
func describeStreamsGroup(ctx context.Context, cl *kgo.Client, group string) (kmsg.StreamsGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.StreamsGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.StreamsGroupDescribeResponseGroup{}, fmt.Errorf("%d groups in the answer", len(resp.Groups))
	}
	return resp.Groups[0], nil
}

// streamsGroupSettled reports whether the group is Stable with the members of n instances
// (two stream threads each, one member per thread), every task of the word count (2
// subtopologies x partitions) active exactly once and each instance with tasks.
func streamsGroupSettled(g kmsg.StreamsGroupDescribeResponseGroup, n int, partitions int32) (bool, string) {
	if g.ErrorCode != 0 || g.State != "Stable" || len(g.Members) != 2*n {
		return false, fmt.Sprintf("error %d, state %s, %d members", g.ErrorCode, g.State, len(g.Members))
	}
	owners := map[string]int{}
	loads := map[string]int{} // by process
	for _, m := range g.Members {
		loads[m.ProcessID] += 0
		for _, ts := range m.Assignment.ActiveTasks {
			for _, p := range ts.Partitions {
				owners[fmt.Sprintf("%s_%d", ts.SubtopologyID, p)]++
				loads[m.ProcessID]++
			}
		}
	}
	if len(owners) != 2*int(partitions) {
		return false, fmt.Sprintf("%d tasks active: %v", len(owners), owners)
	}
	for task, k := range owners {
		if k != 1 {
			return false, fmt.Sprintf("task %s active on %d members", task, k)
		}
	}
	if len(loads) != n {
		return false, fmt.Sprintf("%d processes: %v", len(loads), loads)
	}
	for p, l := range loads {
		if l == 0 {
			return false, fmt.Sprintf("process %s without tasks: %v", p, loads)
		}
	}
	return true, fmt.Sprintf("tasks by process %v", loads)
}

// waitStreamsGroupSettled polls StreamsGroupDescribe until group is settled with n
// processes over partitions (streamsGroupSettled) or ctx ends: the last group described,
// what was last seen, and whether it settled.
func waitStreamsGroupSettled(ctx context.Context, cl *kgo.Client, group string, n int, partitions int32) (kmsg.StreamsGroupDescribeResponseGroup, string, bool) {
	var g kmsg.StreamsGroupDescribeResponseGroup
	var last string
	settled := waitFor(ctx, func() bool {
		var err error
		g, err = describeStreamsGroup(ctx, cl, group)
		if err != nil {
			last = err.Error()
			return false
		}
		var ok bool
		ok, last = streamsGroupSettled(g, n, partitions)
		return ok
	})
	return g, last, settled
}

// runStreamsGroupProtocol runs the test against the broker at addr; restart, when not nil,
// restarts it (samsa only): the group must come back from __consumer_offsets with its epoch,
// the instances heartbeating on without rejoining.
func runStreamsGroupProtocol(t *testing.T, cp, addr string, restart func()) {
	ctx := testContext(t, 12*time.Minute) // generous: runs under load 80 took 8 to 9
	cl, adm := newAdmin(t, addr)
	const app, in, out = "wordcount-sg", "wordcount-sg-in", "wordcount-sg-out"
	const partitions = 3
	createTopicKadm(t, ctx, adm, in, partitions, nil)
	createTopicKadm(t, ctx, adm, out, partitions, nil)
	// The input as in runStreamsEOS: the second half waits for the restarted instance.
	run := startWordCount(t, ctx, addr, in, out)
	defer run.close()
	w, want, totalWords, produced := run.w, run.want, run.totalWords, run.produced

	start := func() *groupProcess {
		cmd := exec.Command("java", "-Xmx384m", "-cp", cp, "samsa.compat.StreamsWordCount", addr, app, in, out, t.TempDir(), "streams")
		return startGroupProcess(t, cmd, "a Streams instance", "streams: ")
	}
	begin := time.Now()
	app1, app2 := start(), start()

	// Both instances in the group, the tasks split between them.
	_, last, settled := waitStreamsGroupSettled(ctx, cl, app, 2, partitions)
	if !settled {
		t.Fatalf("the streams group never settled with both instances: %s", last)
	}
	t.Logf("streams group stable with two instances %v after their start (%s)", time.Since(begin).Round(time.Millisecond), last)
	if !waitFor(ctx, func() bool { return w.total() >= totalWords/5 }) {
		t.Fatalf("the instances committed %d of %d updates before the deadline", w.total(), totalWords)
	}
	before := w.total()
	app1.kill(t)
	t.Logf("SIGKILLed one instance after %d committed updates (of %d)", before, totalWords)
	if before >= totalWords {
		t.Errorf("the kill came after all %d updates: not mid-run", totalWords)
	}
	app3 := start()
	close(run.restarted)
	if err := <-produced; err != nil {
		t.Fatalf("producing the input: %v", err)
	}
	if !waitFor(ctx, func() bool { return w.complete(want) }) {
		t.Errorf("the output never reached the expected counts (%d updates read)", w.total())
	}
	t.Logf("output complete %v after the first start", time.Since(begin).Round(time.Millisecond))
	run.stopWatching()
	checkExactlyOnceCounts(t, w, want, totalWords)

	// The killed instance's member is fenced when its session expires; the group settles
	// with the survivor and the restarted instance.
	_, last, settled = waitStreamsGroupSettled(ctx, cl, app, 2, partitions)
	if !settled {
		t.Errorf("the streams group did not settle after the restart: %s", last)
	}
	g, err := describeStreamsGroup(ctx, cl, app)
	if err != nil {
		t.Fatalf("StreamsGroupDescribe: %v", err)
	}
	if g.Topology == nil || len(g.Topology.Subtopologies) != 2 {
		t.Errorf("described topology %+v, want 2 subtopologies", g.Topology)
	}

	if restart != nil {
		epoch := g.Epoch
		restart()
		g, last, settled = waitStreamsGroupSettled(ctx, cl, app, 2, partitions)
		if !settled {
			t.Fatalf("the streams group did not come back after the broker restart: %s", last)
		}
		if g.Epoch != epoch {
			t.Errorf("group epoch %d after the broker restart, %d before: the group was not kept", g.Epoch, epoch)
		}
		t.Logf("after the broker restart: group epoch %d, %s", g.Epoch, last)
	}

	// kafka-streams-groups (Kafka 4.4's StreamsGroupCommand): --list and --describe --members.
	tool := func(args ...string) string {
		all := append([]string{"-cp", cp, "org.apache.kafka.tools.streams.StreamsGroupCommand", "--bootstrap-server", addr}, args...)
		cmd := exec.CommandContext(ctx, "java", all...)
		outB, err := cmd.CombinedOutput()
		t.Logf("$ kafka-streams-groups %s\n%s", strings.Join(args, " "), outB)
		if err != nil {
			t.Errorf("kafka-streams-groups %s: %v", strings.Join(args, " "), err)
		}
		return string(outB)
	}
	if o := tool("--list"); !strings.Contains(o, app) {
		t.Errorf("kafka-streams-groups --list does not list %s", app)
	}
	o := tool("--describe", "--group", app, "--members")
	for _, m := range g.Members {
		if !strings.Contains(o, m.MemberID) {
			t.Errorf("kafka-streams-groups --describe --members does not show member %s", m.MemberID)
		}
	}
	tool("--describe", "--group", app, "--offsets")

	// (While the instances run: Streams purges the repartition topic.)
	checkStreamsInternalTopics(t, ctx, addr, adm, app, want)

	// Both instances stop (SIGTERM: Streams closes, its members leave the group); the empty
	// group is deleted with kafka-streams-groups --delete.
	for _, p := range []*groupProcess{app2, app3} {
		if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM: %v", err)
		}
	}
	for _, p := range []*groupProcess{app2, app3} {
		select {
		case <-p.done:
		case <-ctx.Done():
			t.Fatalf("a Streams instance still runs after SIGTERM")
		}
	}
	if !waitFor(ctx, func() bool {
		g, err = describeStreamsGroup(ctx, cl, app)
		return err == nil && g.State == "Empty"
	}) {
		t.Fatalf("the streams group is not empty after its instances stopped: %+v", g)
	}
	tool("--delete", "--group", app)
	if g, err = describeStreamsGroup(ctx, cl, app); err != nil || g.ErrorCode != 69 {
		t.Errorf("after kafka-streams-groups --delete: %+v, %v; want GROUP_ID_NOT_FOUND", g, err)
	}
}

// checkExactlyOnceCounts checks the read_committed output: for every word the counts 1..n,
// each once.
func checkExactlyOnceCounts(t *testing.T, w *outputWatcher, want map[string]int64, totalWords int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.mu.bad {
		t.Errorf("output record: %s", b)
	}
	bad := 0
	for k, n := range want {
		vs := w.mu.counts[k]
		ok := int64(len(vs)) == n
		for i := 0; ok && i < len(vs); i++ {
			ok = vs[i] == int64(i+1)
		}
		if !ok {
			bad++
			if bad <= 5 {
				t.Errorf("word %s: read_committed counts %v, want 1..%d each once", k, abbreviateCounts(vs), n)
			}
		}
	}
	t.Logf("read_committed output: %d updates for %d words (want %d), %d words wrong", w.mu.total, len(w.mu.counts), totalWords, bad)
	if len(w.mu.counts) != len(want) {
		t.Errorf("output has %d words, want %d", len(w.mu.counts), len(want))
	}
}
