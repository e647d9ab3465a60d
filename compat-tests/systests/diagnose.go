package systests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KeepEnv names the directory under which a failed scenario leaves its
// evidence (SAMSA_SYSTESTS_KEEP=DIR): each node's whole output and each
// tool's stdout (its JSON events) and stderr, in DIR/<test name>/.
const KeepEnv = "SAMSA_SYSTESTS_KEEP"

// keepDir returns the directory of t's evidence, "" when KeepEnv is unset.
func keepDir(t testing.TB) string {
	root := os.Getenv(KeepEnv)
	if root == "" {
		return ""
	}
	return filepath.Join(root, regexp.MustCompile(`[^A-Za-z0-9._-]+`).ReplaceAllString(t.Name(), "_"))
}

// keepOnFailure registers a cleanup that, when t failed and KeepEnv is
// set, writes what content returns to the file name of t's evidence.
func keepOnFailure(t testing.TB, name string, content func() []byte) {
	t.Cleanup(func() {
		dir := keepDir(t)
		if dir == "" || !t.Failed() {
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Logf("systests: keeping %s: %v", name, err)
			return
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content(), 0o644); err != nil {
			t.Logf("systests: keeping %s: %v", name, err)
			return
		}
		t.Logf("systests: kept %s", p)
	})
}

// keepFile is keepOnFailure of a file's content at cleanup time.
func keepFile(t testing.TB, name, path string) {
	keepOnFailure(t, name, func() []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			return []byte(err.Error() + "\n")
		}
		return b
	})
}

// DiagnosePartition describes, for a failure message, why a consumer may
// not get past offset on partition p of topic: each running node's own
// view of the partition (its Metadata answer: leader, leader epoch,
// replicas, ISR), what each node answers a consumer's Fetch from offset
// (sessionless, no wait: error, high watermark, log start, the batches
// returned; a follower answers a v11+ consumer fetch up to its own high
// watermark), the leader's end offset (ListOffsets), and the group's
// committed offset and owner of the partition.
func DiagnosePartition(c Cluster, topic string, p int32, group string, offset int64) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "%s-%d from offset %d:", topic, p, offset)
	for i, addr := range c.Addrs() {
		if !c.Running(i) {
			fmt.Fprintf(&b, "\n  node index %d (%s): not running", i, addr)
			continue
		}
		fmt.Fprintf(&b, "\n  node index %d (%s): %s", i, addr, nodeView(ctx, addr, topic, p, offset))
	}
	if group != "" {
		b.WriteString("\n  group " + group + ": " + groupView(ctx, c, topic, p, group))
	}
	return b.String()
}

// nodeView is one node's Metadata answer for the partition and its answer
// to a consumer's Fetch from offset.
func nodeView(ctx context.Context, addr, topic string, p int32, offset int64) string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequestRetries(1))
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return "no seed broker"
	}
	node := seeds[0]
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	mreq.Topics = append(mreq.Topics, mt)
	mr, err := node.Request(rctx, mreq)
	if err != nil {
		return "metadata: " + err.Error()
	}
	m := mr.(*kmsg.MetadataResponse)
	var out strings.Builder
	var topicID [16]byte
	for _, tm := range m.Topics {
		if tm.Topic == nil || *tm.Topic != topic {
			continue
		}
		topicID = tm.TopicID
		if tm.ErrorCode != 0 {
			fmt.Fprintf(&out, "metadata %v; ", kerr.ErrorForCode(tm.ErrorCode))
		}
		for _, pm := range tm.Partitions {
			if pm.Partition == p {
				fmt.Fprintf(&out, "metadata leader=%d epoch=%d replicas=%v isr=%v", pm.Leader, pm.LeaderEpoch, pm.Replicas, pm.ISR)
				if pm.ErrorCode != 0 {
					fmt.Fprintf(&out, " (%v)", kerr.ErrorForCode(pm.ErrorCode))
				}
			}
		}
	}

	freq := kmsg.NewPtrFetchRequest()
	freq.ReplicaID, freq.ReplicaState.ID = -1, -1
	freq.MaxWaitMillis, freq.MinBytes, freq.MaxBytes = 0, 1, 1<<20
	freq.SessionID, freq.SessionEpoch = 0, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, topicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, offset, 1<<20
	fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.LogStartOffset = -1, -1, -1
	ft.Partitions = append(ft.Partitions, fp)
	freq.Topics = append(freq.Topics, ft)
	fr, err := node.Request(rctx, freq)
	if err != nil {
		fmt.Fprintf(&out, "; fetch: %v", err)
		return out.String()
	}
	f := fr.(*kmsg.FetchResponse)
	if f.ErrorCode != 0 {
		fmt.Fprintf(&out, "; fetch: %v", kerr.ErrorForCode(f.ErrorCode))
	}
	for _, t := range f.Topics {
		for _, fp := range t.Partitions {
			fmt.Fprintf(&out, "; fetch: hw=%d lso=%d logStart=%d", fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset)
			if fp.ErrorCode != 0 {
				fmt.Fprintf(&out, " error=%v", kerr.ErrorForCode(fp.ErrorCode))
			}
			if fp.CurrentLeader.LeaderID >= 0 || fp.CurrentLeader.LeaderEpoch >= 0 {
				fmt.Fprintf(&out, " currentLeader=%d/%d", fp.CurrentLeader.LeaderID, fp.CurrentLeader.LeaderEpoch)
			}
			if fp.PreferredReadReplica >= 0 {
				fmt.Fprintf(&out, " preferredReadReplica=%d", fp.PreferredReadReplica)
			}
			out.WriteString(" " + describeBatches(fp.RecordBatches))
		}
	}

	lreq := kmsg.NewPtrListOffsetsRequest()
	lreq.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p, -1, -1
	lt.Partitions = append(lt.Partitions, lp)
	lreq.Topics = append(lreq.Topics, lt)
	if lr, err := node.Request(rctx, lreq); err != nil {
		fmt.Fprintf(&out, "; list offsets: %v", err)
	} else {
		for _, t := range lr.(*kmsg.ListOffsetsResponse).Topics {
			for _, lp := range t.Partitions {
				if lp.ErrorCode != 0 {
					fmt.Fprintf(&out, "; list offsets: %v", kerr.ErrorForCode(lp.ErrorCode))
				} else {
					fmt.Fprintf(&out, "; end offset %d (epoch %d)", lp.Offset, lp.LeaderEpoch)
				}
			}
		}
	}
	return out.String()
}

// describeBatches summarizes a fetch's record batches: how many, and the
// offsets and leader epochs they span.
func describeBatches(b []byte) string {
	n := 0
	var first, last int64 = -1, -1
	var epochs []int32
	for len(b) >= 61 {
		var rb kmsg.RecordBatch
		length := int(int32(uint32(b[8])<<24 | uint32(b[9])<<16 | uint32(b[10])<<8 | uint32(b[11])))
		if length < 49 || 12+length > len(b) {
			break // a partial batch at the end of the range
		}
		if err := rb.ReadFrom(b[:12+length]); err != nil {
			break
		}
		if n == 0 {
			first = rb.FirstOffset
		}
		last = rb.FirstOffset + int64(rb.LastOffsetDelta)
		if len(epochs) == 0 || epochs[len(epochs)-1] != rb.PartitionLeaderEpoch {
			epochs = append(epochs, rb.PartitionLeaderEpoch)
		}
		n++
		b = b[12+length:]
	}
	if n == 0 {
		return "no records"
	}
	return fmt.Sprintf("%d batches, offsets %d-%d, leader epochs %v", n, first, last, epochs)
}

// groupView is the group's committed offset of the partition and its
// members' assignments (DescribeGroups, classic groups).
func groupView(ctx context.Context, c Cluster, topic string, p int32, group string) string {
	cl, err := client(c)
	if err != nil {
		return err.Error()
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var out []string
	if offs, err := adm.FetchOffsets(ctx, group); err != nil {
		out = append(out, "committed: "+err.Error())
	} else if o, ok := offs.Lookup(topic, p); ok {
		s := fmt.Sprintf("committed %d (epoch %d)", o.At, o.LeaderEpoch)
		if o.Err != nil {
			s += fmt.Sprintf(" (%v)", o.Err)
		}
		out = append(out, s)
	} else {
		out = append(out, "nothing committed")
	}
	if gs, err := adm.DescribeGroups(ctx, group); err != nil {
		out = append(out, "describe: "+err.Error())
	} else {
		for _, g := range gs.Sorted() {
			s := fmt.Sprintf("state %s, coordinator %d", g.State, g.Coordinator.NodeID)
			if g.Err != nil {
				s += fmt.Sprintf(" (%v)", g.Err)
			}
			var owners []string
			for _, m := range g.Members {
				if ca, ok := m.Assigned.AsConsumer(); ok {
					for _, at := range ca.Topics {
						if at.Topic == topic {
							ps := append([]int32(nil), at.Partitions...)
							sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
							owners = append(owners, fmt.Sprintf("%s (%s) %v", m.ClientID, m.MemberID, ps))
						}
					}
				}
			}
			out = append(out, s+", members: "+strings.Join(owners, "; "))
		}
	}
	return strings.Join(out, "; ")
}

// LinesAbout returns the last n lines of s that contain every one of
// words, for a failure message (a consumer's DEBUG lines about one
// partition).
func LinesAbout(s string, n int, words ...string) string {
	var hits []string
	for line := range strings.SplitSeq(s, "\n") {
		ok := true
		for _, w := range words {
			if !strings.Contains(line, w) {
				ok = false
				break
			}
		}
		if ok {
			hits = append(hits, line)
		}
	}
	if len(hits) > n {
		hits = hits[len(hits)-n:]
	}
	return strings.Join(hits, "\n")
}

// nodeRE matches a Java client's Node in its DEBUG lines: "host:port (id: N rack: ...".
var nodeRE = regexp.MustCompile(`([A-Za-z0-9.\-]+):(\d+) \(id: (-?\d+) rack`)

// ForeignNodes returns the nodes ("host:port (id: N)") a Java client's log
// names on a port that is none of addrs' (host:port, the listener it was
// given): a broker that sent it to another listener, as samsa's KIP-951
// NodeEndpoints once did (the PLAINTEXT port to SSL clients, session 32).
func ForeignNodes(log string, addrs []string) []string {
	ports := map[string]bool{}
	for _, a := range addrs {
		if i := strings.LastIndexByte(a, ':'); i >= 0 {
			ports[a[i+1:]] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range nodeRE.FindAllStringSubmatch(log, -1) {
		n := fmt.Sprintf("%s:%s (id: %s)", m[1], m[2], m[3])
		if !ports[m[2]] && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
