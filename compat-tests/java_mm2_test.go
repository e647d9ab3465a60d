// This file runs MirrorMaker 2 (org.apache.kafka.connect.mirror.MirrorMaker, dedicated mode; the
// connect-mirror 4.3.1 that compat-tests/java/mm2/pom.xml resolves, the newest on Maven Central)
// from one cluster to another: samsa to samsa in CI, and with SAMSA_MM2=full also a three-node
// samsa source, Kafka 4.4 to samsa, samsa to Kafka 4.4 and Kafka 4.4 to Kafka 4.4 (the
// reference), and exactly once (transactional writes on the target) samsa to samsa and Kafka to
// Kafka. Both clusters run an authorizer (StandardAuthorizer, MirrorMaker's ANONYMOUS
// principal a super user). It checks what a migration relies on: the topic appears on the
// target as src.<topic> with its partitions and configs, every record arrives with its key,
// value, headers and timestamp, ACLs are synced (ALLOW WRITE skipped, ALLOW ALL downgraded to
// READ, as MirrorSourceConnector documents), a consumer group's committed offsets are
// translated and synced to the target so that the group, moved there, loses nothing and
// re-reads a bounded number of records, partitions and config changes made on the source
// follow, and the heartbeats, checkpoints and offset-syncs topics exist and are compacted.

package compattests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

const (
	mm2Topic   = "mm2-orders"
	mm2Group   = "mm2-app"
	mm2Lagging = "mm2-lagging"
	// mm2OffsetLagMax is MirrorMaker's offset.lag.max in the test: an offset sync at least
	// every this many records of a partition. A translated group offset is at most this
	// many records (plus one) behind the source's committed offset.
	mm2OffsetLagMax = 10
)

var mm2Build struct {
	once sync.Once
	cp   string
	err  error
	out  []byte
}

// mm2Classpath returns MirrorMaker 2's classpath (compat-tests/java/mm2/target/classpath.txt),
// resolving it with Maven when missing or older than the pom.
func mm2Classpath(t *testing.T) string {
	t.Helper()
	lookTool(t, "java")
	dir, err := filepath.Abs(filepath.Join("java", "mm2"))
	if err != nil {
		t.Fatal(err)
	}
	mm2Build.once.Do(func() {
		cpFile := filepath.Join(dir, "target", "classpath.txt")
		built, err := os.Stat(cpFile)
		pom, perr := os.Stat(filepath.Join(dir, "pom.xml"))
		if perr != nil {
			mm2Build.err = perr
			return
		}
		if err != nil || built.ModTime().Before(pom.ModTime()) {
			if _, err := exec.LookPath("mvn"); err != nil {
				mm2Build.err = err
				return
			}
			cmd := exec.Command("mvn", "-B", "-q", "generate-sources")
			cmd.Dir = dir
			if mm2Build.out, mm2Build.err = cmd.CombinedOutput(); mm2Build.err != nil {
				return
			}
		}
		var deps []byte
		deps, mm2Build.err = os.ReadFile(cpFile)
		mm2Build.cp = strings.TrimSpace(string(deps))
	})
	if mm2Build.err != nil {
		if _, ok := mm2Build.err.(*exec.Error); ok {
			missingClient(t, "cannot resolve compat-tests/java/mm2: %v", mm2Build.err)
		}
		t.Fatalf("resolving compat-tests/java/mm2 (mvn -B -q generate-sources): %v\n%s", mm2Build.err, mm2Build.out)
	}
	return mm2Build.cp
}

// mm2Authorizer is the authorizer both clusters run: MirrorMaker connects as ANONYMOUS over
// PLAINTEXT, a super user, so the ACLs it syncs are data, not its own permissions.
var mm2Authorizer = map[string]string{
	"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users":           "User:ANONYMOUS",
}

func mm2Samsa(t *testing.T) string {
	return harness.Start(t, harness.Options{Overrides: mm2Authorizer}).Addr
}

func mm2Samsa3(t *testing.T) string {
	env := []string{}
	for k, v := range mm2Authorizer {
		env = append(env, "KAFKA_"+strings.ToUpper(strings.ReplaceAll(k, ".", "_"))+"="+v)
	}
	return strings.Join(harness.StartCluster(t, 3, harness.ClusterOptions{Env: env}).Addrs(), ",")
}

func mm2Kafka(t *testing.T) string {
	var o []string
	for k, v := range mm2Authorizer {
		o = append(o, k+"="+v)
	}
	sort.Strings(o)
	return kafkaref.Start(t, kafkaref.Options{Overrides: o}).Bootstrap()
}

// TestJavaMirrorMaker2 replicates a topic, its ACLs and a consumer group's offsets with
// MirrorMaker 2 from one cluster to another (see the file comment).
func TestJavaMirrorMaker2(t *testing.T) {
	cp := mm2Classpath(t)
	type pair struct {
		name     string
		src, dst func(*testing.T) string
		full     bool
		eos      bool // exactly.once.source.support=enabled on the target's herder
	}
	pairs := []pair{
		{"samsa-samsa", mm2Samsa, mm2Samsa, false, false},
		{"samsa3-samsa", mm2Samsa3, mm2Samsa, true, false},
		{"kafka-samsa", mm2Kafka, mm2Samsa, true, false},
		{"samsa-kafka", mm2Samsa, mm2Kafka, true, false},
		{"kafka-kafka", mm2Kafka, mm2Kafka, true, false},
		{"samsa-samsa-eos", mm2Samsa, mm2Samsa, true, true},
		{"kafka-kafka-eos", mm2Kafka, mm2Kafka, true, true},
	}
	// SAMSA_MM2=full runs every pair; a comma-separated list of pair names runs those.
	sel := os.Getenv("SAMSA_MM2")
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			run := !p.full
			if sel != "" {
				run = sel == "full" || strings.Contains(","+sel+",", ","+p.name+",")
			}
			if !run {
				t.Skip("SAMSA_MM2=full (or a list naming " + p.name + ") runs this pair")
			}
			runMirrorMaker2(t, cp, p.src(t), p.dst(t), p.eos)
		})
	}
}

// mm2Record is one record produced on the source, as the target must hold it.
type mm2Record struct {
	key, value string
	headers    []kgo.RecordHeader
	ts         time.Time
	part       int32 // on the source
	off        int64
}

// runMirrorMaker2 runs the test from src to dst. With eos MirrorMaker's source task writes in
// transactions, so the target's offsets differ from the source's (transaction markers): the
// group's synced offsets are judged by what the moved group reads, not by their values.
func runMirrorMaker2(t *testing.T, cp, src, dst string, eos bool) {
	ctx := testContext(t, 6*time.Minute)
	start := time.Now()
	// MirrorMaker gets every address of a cluster; the Go clients one (they find the rest).
	srcCl, srcAdm := newAdmin(t, strings.Split(src, ",")[0])
	_, dstAdm := newAdmin(t, strings.Split(dst, ",")[0])
	mmSrc, mmDst := src, dst
	src, dst = strings.Split(src, ",")[0], strings.Split(dst, ",")[0]
	remote := "src." + mm2Topic

	// The source topic, with configs MirrorMaker syncs, and ACLs on it.
	cfgs := map[string]*string{
		"retention.ms":      kadm.StringPtr("123456789"),
		"max.message.bytes": kadm.StringPtr("200000"),
		"cleanup.policy":    kadm.StringPtr("delete"),
	}
	createTopicKadm(t, ctx, srcAdm, mm2Topic, 3, cfgs)
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Allow("User:alice").Topics(mm2Topic).Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:bob").Topics(mm2Topic).Operations(kadm.OpAll).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Allow("User:carol").Topics(mm2Topic).Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral),
		kadm.NewACLs().Deny("User:dave").Topics(mm2Topic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral),
	}
	for _, b := range acls {
		rs, err := srcAdm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatalf("CreateACLs: %v", err)
		}
		for _, r := range rs {
			if r.Err != nil {
				t.Fatalf("CreateACLs %s: %v", r.Principal, r.Err)
			}
		}
	}

	// Records before MirrorMaker starts.
	produced := make(map[string]mm2Record)
	produce := func(from, to int) {
		t.Helper()
		var rs []*kgo.Record
		for i := from; i < to; i++ {
			r := &kgo.Record{
				Topic: mm2Topic,
				Key:   []byte(fmt.Sprintf("key-%05d", i)),
				Value: []byte(fmt.Sprintf("value %05d %s", i, strings.Repeat("x", i%50))),
				Headers: []kgo.RecordHeader{
					{Key: "seq", Value: []byte(fmt.Sprint(i))},
					{Key: "empty", Value: nil},
				},
			}
			rs = append(rs, r)
		}
		if err := srcCl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		for _, r := range rs {
			produced[string(r.Key)] = mm2Record{string(r.Key), string(r.Value), r.Headers, r.Timestamp, r.Partition, r.Offset}
		}
	}
	produce(0, 600)

	dir := t.TempDir()
	props := filepath.Join(dir, "mm2.properties")
	cfg := strings.Join([]string{
		"clusters=src, dst",
		"src.bootstrap.servers=" + mmSrc,
		"dst.bootstrap.servers=" + mmDst,
		"src->dst.enabled=true",
		"src->dst.topics=mm2-.*",
		"dst->src.enabled=false",
		"replication.factor=1",
		"checkpoints.topic.replication.factor=1",
		"heartbeats.topic.replication.factor=1",
		"offset-syncs.topic.replication.factor=1",
		"offset.storage.replication.factor=1",
		"status.storage.replication.factor=1",
		"config.storage.replication.factor=1",
		"sync.topic.acls.enabled=true",
		"sync.topic.acls.interval.seconds=2",
		"sync.topic.configs.interval.seconds=2",
		"sync.group.offsets.enabled=true",
		"sync.group.offsets.interval.seconds=1",
		"emit.checkpoints.interval.seconds=1",
		"emit.heartbeats.interval.seconds=1",
		"refresh.topics.interval.seconds=2",
		"refresh.groups.interval.seconds=2",
		fmt.Sprintf("offset.lag.max=%d", mm2OffsetLagMax),
		// A herder's worker settings are the target cluster's (MirrorMakerConfig.workerConfig:
		// a top-level offset.flush.interval.ms is ignored). The source task's commit, every
		// second here (60 s by default), is when MirrorMaker also writes the offset syncs it
		// held back, so that the newest position of a partition becomes translatable.
		"dst.offset.flush.interval.ms=1000",
		"scheduled.rebalance.max.delay.ms=0",
	}, "\n") + "\n"
	if eos {
		// The herder's worker setting, the target's; the source consumer reads committed
		// records only (MirrorSourceConnector's condition for exactly-once support). A
		// flow-wide exactly.once.support=required would also apply to the checkpoint and
		// heartbeat connectors, which fail its preflight check.
		cfg += "dst.exactly.once.source.support=enabled\nsrc.consumer.isolation.level=read_committed\n"
	}
	if err := os.WriteFile(props, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// MirrorMaker's log outlives a failed test (its path is in the test log).
	logDir, err := os.MkdirTemp("", "samsa-mm2-log-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(logDir)
		}
	})
	mm := startMirrorMaker(t, cp, props, filepath.Join(logDir, "mm2.log"))

	// Every record on the target, partition by partition in the source's order.
	waitMM2Records(t, ctx, dst, dstAdm, remote, 3, produced, eos)
	t.Logf("%d records replicated after %v", len(produced), time.Since(start).Round(time.Millisecond))

	// Two consumer groups on the source: mm2-app reads everything and commits at the end of
	// each partition, mm2-lagging reads 250 records and commits there.
	committed := mm2ConsumeGroup(t, ctx, src, srcAdm, mm2Topic, mm2Group, -1)
	lagging := mm2ConsumeGroup(t, ctx, src, srcAdm, mm2Topic, mm2Lagging, 250)

	// Their offsets translated onto the target. Translation goes through the offset syncs
	// MirrorMaker writes: one at least every offset.lag.max records, and at each commit of
	// the source task the newest position of each partition. mm2-app, committed at the ends,
	// must therefore arrive exactly (Kafka 4.4 to Kafka 4.4 does). An older offset translates
	// to the downstream offset of a sync at or before it, MirrorMaker's OffsetSyncStore
	// keeping fewer syncs the older they are (spaced exponentially), or not at all when no
	// sync at or before it is kept: mm2-lagging's offsets need not arrive, and never past
	// the source's (which would lose records).
	var synced, syncedLagging map[int32]int64
	if !waitFor(ctx, func() bool {
		synced = mm2GroupOffsets(ctx, dstAdm, mm2Group, remote)
		for p, o := range committed {
			if s, ok := synced[p]; !ok || (!eos && s != o) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("group %s on the target: %v, want the source's %v", mm2Group, synced, committed)
	}
	syncedLagging = mm2GroupOffsets(ctx, dstAdm, mm2Lagging, remote)
	for p, o := range syncedLagging {
		if !eos && o > lagging[p] {
			t.Errorf("group %s partition %d: synced offset %d is past the source's committed %d (records lost)", mm2Lagging, p, o, lagging[p])
		}
	}
	t.Logf("group offsets: %s source %v target %v; %s source %v target %v (after %v)", mm2Group, committed, synced,
		mm2Lagging, lagging, syncedLagging, time.Since(start).Round(time.Millisecond))
	produce(600, 900)
	waitMM2Records(t, ctx, dst, dstAdm, remote, 3, produced, eos)

	// Partitions added and a config changed on the source follow to the target.
	if rs, err := srcAdm.UpdatePartitions(ctx, 5, mm2Topic); err != nil || rs.Error() != nil {
		t.Fatalf("UpdatePartitions: %v / %v", err, rs.Error())
	}
	if rs, err := srcAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("987654321")}}, mm2Topic); err != nil || rs[0].Err != nil {
		t.Fatalf("AlterTopicConfigs: %v / %v", err, rs)
	}
	waitTopicReady(t, ctx, srcAdm, mm2Topic, 5)
	produce(900, 1100)
	waitMM2Records(t, ctx, dst, dstAdm, remote, 5, produced, eos)
	t.Logf("%d records on 5 partitions after %v", len(produced), time.Since(start).Round(time.Millisecond))
	if eos {
		// Transactions leave markers: more offsets than records.
		ends, err := dstAdm.ListEndOffsets(ctx, remote)
		if err != nil {
			t.Fatalf("ListEndOffsets: %v", err)
		}
		n := int64(0)
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		if n <= int64(len(produced)) {
			t.Errorf("target topic %s: %d offsets for %d records, no transaction markers (MirrorMaker did not write in transactions)", remote, n, len(produced))
		}
		t.Logf("target topic %s: %d offsets for %d records (transaction markers)", remote, n, len(produced))
	}
	want := map[string]string{"retention.ms": "987654321", "max.message.bytes": "200000", "cleanup.policy": "delete"}
	var got map[string]string
	if !waitFor(ctx, func() bool {
		got = mm2TopicConfigs(ctx, dstAdm, remote)
		for k, v := range want {
			if got[k] != v {
				return false
			}
		}
		return true
	}) {
		t.Errorf("target topic %s configs %v, want %v", remote, got, want)
	}

	// ACLs: alice's READ and DESCRIBE, bob's ALL as READ, dave's DENY READ; not carol's WRITE.
	wantACLs := []string{"User:alice ALLOW DESCRIBE", "User:alice ALLOW READ", "User:bob ALLOW READ", "User:dave DENY READ"}
	var gotACLs []string
	if !waitFor(ctx, func() bool {
		gotACLs = mm2TopicACLs(ctx, dstAdm, remote)
		return strings.Join(gotACLs, ",") == strings.Join(wantACLs, ",")
	}) {
		t.Errorf("target ACLs on %s: %v, want %v", remote, gotACLs, wantACLs)
	}

	// The group, moved to the target, reads every record from its synced position: every
	// record the source group had not committed, and at most offset.lag.max+1 per partition
	// it had.
	mm2CheckMovedGroup(t, ctx, dst, dstAdm, remote, committed, produced, eos)

	// MirrorMaker's own topics: heartbeats and checkpoints on the target, offset syncs on the
	// source, the dedicated herder's configs, offsets and status on the target; all compacted.
	mm2CheckInternalTopics(t, ctx, srcAdm, dstAdm, src, dst, eos)

	mm.stop(t)
	if errs := mm.errorLines(); len(errs) > 0 {
		t.Errorf("MirrorMaker logged %d ERROR lines, first: %s", len(errs), errs[0])
	}
	t.Logf("done after %v", time.Since(start).Round(time.Millisecond))
}

// mirrorMaker is a running MirrorMaker JVM, its log (INFO and above) in a file.
type mirrorMaker struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func startMirrorMaker(t *testing.T, cp, props, logPath string) *mirrorMaker {
	t.Helper()
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("java", "-Xmx512m",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-cp", cp, "org.apache.kafka.connect.mirror.MirrorMaker", props, "--clusters", "dst")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.WaitDelay = 10 * time.Second
	if err := childproc.Start(cmd); err != nil {
		t.Fatalf("starting MirrorMaker: %v", err)
	}
	m := &mirrorMaker{cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(m.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-m.done
		if t.Failed() {
			for _, l := range m.lines(func(l string) bool { return strings.Contains(l, " WARN ") || strings.Contains(l, " ERROR ") }) {
				t.Logf("mm2: %s", l)
			}
			t.Logf("MirrorMaker's whole log: %s", logPath)
		}
	})
	return m
}

// stop sends SIGTERM and waits for MirrorMaker to exit.
func (m *mirrorMaker) stop(t *testing.T) {
	t.Helper()
	_ = syscall.Kill(m.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(90 * time.Second):
		t.Errorf("MirrorMaker (pid %d) still runs 90 s after SIGTERM", m.cmd.Process.Pid)
	}
}

func (m *mirrorMaker) lines(keep func(string) bool) []string {
	f, err := os.Open(m.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if l := sc.Text(); keep(l) {
			if len(l) > 2000 {
				l = l[:2000] + "..."
			}
			out = append(out, l)
		}
	}
	return out
}

// errorLines returns MirrorMaker's ERROR lines but one MirrorMaker race: a checkpoint task
// restarted for new task configs (a group or partitions appeared) closes its admin client while
// its scheduler still syncs group offsets through it, which logs "Unable to sync offsets for
// consumer group" (or "Error querying for consumer group") with "Cannot accept new calls when
// AdminClient is closing"; MirrorMaker's code whatever the broker, and the new task syncs them.
func (m *mirrorMaker) errorLines() []string {
	all := m.lines(func(string) bool { return true })
	var out []string
	for i, l := range all {
		if !strings.Contains(l, " ERROR ") {
			continue
		}
		if i+1 < len(all) && strings.Contains(all[i+1], "Cannot accept new calls when AdminClient is closing") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// waitMM2Records waits until the target topic has parts partitions holding, partition by
// partition, the records produced on the source in the source's order (key, value, headers,
// timestamp), and fails with the first difference otherwise.
func waitMM2Records(t *testing.T, ctx context.Context, dst string, adm *kadm.Client, topic string, parts int, produced map[string]mm2Record, eos bool) {
	t.Helper()
	var last string
	var got map[int32][]*kgo.Record
	ok := waitFor(ctx, func() bool {
		md, err := adm.Metadata(ctx, topic)
		if err != nil || md.Topics[topic].Err != nil || len(md.Topics[topic].Partitions) != parts {
			last = fmt.Sprintf("topic %s: metadata %v, want %d partitions", topic, err, parts)
			return false
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			last = err.Error()
			return false
		}
		n := int64(0)
		ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
		if n < int64(len(produced)) {
			last = fmt.Sprintf("topic %s: %d offsets, want %d records", topic, n, len(produced))
			return false
		}
		// With eos transaction markers take offsets too: count the records.
		got = mm2Read(t, ctx, dst, adm, topic, eos)
		n = 0
		for _, rs := range got {
			n += int64(len(rs))
		}
		last = fmt.Sprintf("topic %s: %d records, want %d", topic, n, len(produced))
		return n >= int64(len(produced))
	})
	if !ok {
		t.Fatalf("MirrorMaker did not replicate: %s", last)
	}
	seen := 0
	for p, rs := range got {
		prevSeq := -1
		for _, r := range rs {
			want, ok := produced[string(r.Key)]
			if !ok {
				t.Fatalf("%s/%d offset %d: key %q was not produced", topic, p, r.Offset, r.Key)
			}
			if string(r.Value) != want.value || !r.Timestamp.Equal(want.ts) || !sameHeaders(r.Headers, want.headers) {
				t.Fatalf("%s/%d offset %d: %q=%q ts %v headers %v, want %q ts %v headers %v", topic, p, r.Offset, r.Key, r.Value, r.Timestamp, r.Headers, want.value, want.ts, want.headers)
			}
			var seq int
			fmt.Sscanf(string(r.Key), "key-%d", &seq)
			if seq <= prevSeq {
				t.Fatalf("%s/%d offset %d: key %q after seq %d (out of order or duplicated)", topic, p, r.Offset, r.Key, prevSeq)
			}
			prevSeq = seq
			seen++
		}
	}
	if seen != len(produced) {
		t.Fatalf("%s: %d records, want %d", topic, seen, len(produced))
	}
}

func sameHeaders(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || string(a[i].Value) != string(b[i].Value) {
			return false
		}
	}
	return true
}

// mm2ConsumeGroup reads topic in group: n records at least, or with n < 0 every record up to
// the end offsets as listed now; it commits what it read, leaves, and returns the committed
// offsets by partition.
func mm2ConsumeGroup(t *testing.T, ctx context.Context, addr string, adm *kadm.Client, topic, group string, n int) map[int32]int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxBytes(4000), kgo.FetchMaxPartitionBytes(1000))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	read := 0
	pos := make(map[int32]int64)
	done := func() bool {
		if n >= 0 {
			return read >= n
		}
		all := true
		ends.Each(func(e kadm.ListedOffset) { all = all && pos[e.Partition] >= e.Offset })
		return all
	}
	for !done() && ctx.Err() == nil {
		max := 100
		if n >= 0 {
			max = n - read
		}
		fs := cl.PollRecords(ctx, max)
		if err := fs.Err0(); err != nil && ctx.Err() == nil {
			t.Fatalf("consume %s in group %s: %v", topic, group, err)
		}
		fs.EachRecord(func(r *kgo.Record) { pos[r.Partition] = r.Offset + 1 })
		read += fs.NumRecords()
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
	if !done() {
		t.Fatalf("group %s read %d records of %s, positions %v", group, read, topic, pos)
	}
	out := make(map[int32]int64)
	for _, ps := range cl.CommittedOffsets() {
		for p, o := range ps {
			out[p] = o.Offset
		}
	}
	t.Logf("group %s read %d records of %s and committed %v", group, read, topic, out)
	return out
}

// mm2GroupOffsets returns group's committed offsets on topic.
func mm2GroupOffsets(ctx context.Context, adm *kadm.Client, group, topic string) map[int32]int64 {
	fo, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil
	}
	out := make(map[int32]int64)
	for p, o := range fo[topic] {
		if o.Err == nil && o.At >= 0 {
			out[p] = o.At
		}
	}
	return out
}

func mm2TopicConfigs(ctx context.Context, adm *kadm.Client, topic string) map[string]string {
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return nil
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		return nil
	}
	out := make(map[string]string)
	for _, c := range rc.Configs {
		out[c.Key] = c.MaybeValue()
	}
	return out
}

// mm2TopicACLs lists the ACLs on topic as "principal PERMISSION OPERATION", sorted.
func mm2TopicACLs(ctx context.Context, adm *kadm.Client, topic string) []string {
	rs, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics(topic).ResourcePatternType(kadm.ACLPatternAny).
		Allow().Deny().AllowHosts().DenyHosts().Operations(kadm.OpAny))
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, r := range rs {
		if r.Err != nil {
			return []string{r.Err.Error()}
		}
		for _, d := range r.Described {
			out = append(out, fmt.Sprintf("%s %s %s", d.Principal, d.Permission, d.Operation))
		}
	}
	sort.Strings(out)
	return out
}

// mm2Read reads every record of topic: by offsets, or with eos under read_committed up to the
// end offsets (transaction markers take offsets).
func mm2Read(t *testing.T, ctx context.Context, addr string, adm *kadm.Client, topic string, eos bool) map[int32][]*kgo.Record {
	t.Helper()
	if eos {
		return consumeCommitted(t, ctx, addr, adm, topic)
	}
	return consumeAll(t, ctx, addr, adm, topic)
}

// mm2CheckMovedGroup consumes the target topic in mm2Group from its synced offsets to the
// end, and judges by the records' source offsets: every record at or past the source
// group's committed offset must come (no loss), once, and at most offset.lag.max+1 records
// per partition before it (the duplicates a move costs).
func mm2CheckMovedGroup(t *testing.T, ctx context.Context, dst string, adm *kadm.Client, topic string, committed map[int32]int64, produced map[string]mm2Record, eos bool) {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(dst), kgo.ConsumerGroup(mm2Group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200 * time.Millisecond)}
	slack := int64(0)
	if eos {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
		slack = trailingMarkers
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	last := make(map[int32]int64)
	read := make(map[string]int)
	reached := func() bool {
		done := true
		ends.Each(func(e kadm.ListedOffset) {
			if e.Offset-slack > 0 && last[e.Partition]+1 < e.Offset-slack {
				done = false
			}
		})
		return done
	}
	readCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for !reached() && readCtx.Err() == nil {
		cl.PollFetches(readCtx).EachRecord(func(r *kgo.Record) {
			last[r.Partition] = r.Offset
			read[string(r.Key)]++
		})
	}
	if !reached() {
		t.Fatalf("the group moved to the target did not read to the end: last offsets %v, ends %v", last, offsetsOf(ends))
	}
	dups := make(map[int32]int)
	lost := 0
	for k, r := range produced {
		c, ok := committed[r.part]
		switch {
		case read[k] > 1:
			t.Errorf("moved group: %s (source %d/%d) read %d times", k, r.part, r.off, read[k])
		case read[k] == 0 && (!ok || r.off >= c):
			if lost++; lost <= 5 {
				t.Errorf("moved group: %s (source %d/%d, committed %d) not read (lost)", k, r.part, r.off, c)
			}
		case read[k] == 1 && ok && r.off < c:
			dups[r.part]++
		}
	}
	for p, n := range dups {
		if n > mm2OffsetLagMax+1 {
			t.Errorf("moved group, partition %d: %d records read again from before the source's committed %d", p, n, committed[p])
		}
	}
	t.Logf("the moved group read %d records to the ends, %d lost, re-read before the committed offsets %v", len(read), lost, dups)
}

func mm2CheckInternalTopics(t *testing.T, ctx context.Context, srcAdm, dstAdm *kadm.Client, src, dst string, eos bool) {
	t.Helper()
	compacted := func(adm *kadm.Client, where string, topics ...string) {
		for _, topic := range topics {
			var got map[string]string
			if !waitFor(ctx, func() bool {
				got = mm2TopicConfigs(ctx, adm, topic)
				return got["cleanup.policy"] == "compact"
			}) {
				t.Errorf("%s topic %s: cleanup.policy %q, want compact", where, topic, got["cleanup.policy"])
			}
		}
	}
	compacted(dstAdm, "target", "heartbeats", "src.checkpoints.internal", "mm2-configs.src.internal", "mm2-offsets.src.internal", "mm2-status.src.internal")
	compacted(srcAdm, "source", "mm2-offset-syncs.dst.internal")

	// A heartbeat on the target names the flow (key: source and target cluster aliases);
	// a checkpoint names the group and the source topic.
	has := func(addr string, adm *kadm.Client, topic string, parts ...string) {
		for _, rs := range mm2Read(t, ctx, addr, adm, topic, eos) {
			for _, r := range rs {
				all := true
				for _, s := range parts {
					all = all && strings.Contains(string(r.Key), s)
				}
				if all {
					return
				}
			}
		}
		t.Errorf("topic %s has no record whose key names %q", topic, parts)
	}
	has(dst, dstAdm, "heartbeats", "src", "dst")
	has(dst, dstAdm, "src.checkpoints.internal", mm2Group, mm2Topic)
	has(src, srcAdm, "mm2-offset-syncs.dst.internal", mm2Topic)
}
