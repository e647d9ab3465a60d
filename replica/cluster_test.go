package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// testNet is an in-memory network between the nodes' fetchers and the
// leaders' ServeReplicaFetch; a disconnected node can neither fetch nor be
// fetched from (hashicorp/raft's InmemTransport.Disconnect).
type testNet struct {
	mu    sync.Mutex
	nodes map[int32]*Manager
	down  map[int32]bool
	// hung nodes take every fetch to them and answer nothing: the fetch
	// returns only after hungFetchTimeout, whatever its context says, as
	// a request over TCP to a node behind a blackhole route.
	hung map[int32]bool
	// closed releases the hung fetches when the test's cluster closes.
	closed chan struct{}
	// fetches counts the fetches served (benchmarks report it per op).
	fetches atomic.Int64
}

// hungFetchTimeout is how long a fetch to a hung node takes to fail: the
// inter-broker request timeout.
const hungFetchTimeout = 30 * time.Second

var errDisconnected = errors.New("replica test: disconnected")

func (n *testNet) fetchFrom(self int32) FetchFunc {
	return func(ctx context.Context, leader int32, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
		n.mu.Lock()
		m, ok := n.nodes[leader]
		down := n.down[self] || n.down[leader]
		hung := n.hung[leader]
		n.mu.Unlock()
		if hung {
			select {
			case <-time.After(hungFetchTimeout):
			case <-n.closed:
			}
			return nil, errDisconnected
		}
		if !ok || down {
			// A dead connection costs a timeout, not a spin.
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			return nil, errDisconnected
		}
		n.fetches.Add(1)
		// Through the wire encoding, as over TCP.
		req.SetVersion(16)
		var back kmsg.FetchRequest
		back.SetVersion(16)
		if err := back.ReadFrom(req.AppendTo(nil)); err != nil {
			return nil, err
		}
		// Even nodes are served file ranges (ServeReplicaFetchRanges, as
		// over a plaintext listener), odd ones copies: both paths
		// replicate in every test.
		var resp *kmsg.FetchResponse
		if self%2 == 0 {
			var err error
			if resp, err = inlineRanges(m.ServeReplicaFetchRanges(ctx, &back)); err != nil {
				return nil, err
			}
		} else {
			resp = m.ServeReplicaFetch(ctx, &back)
		}
		n.mu.Lock()
		down = n.down[self] || n.down[leader]
		n.mu.Unlock()
		if down { // the link went down while the fetch was parked
			return nil, errDisconnected
		}
		var out kmsg.FetchResponse
		out.SetVersion(16)
		if err := out.ReadFrom(resp.AppendTo(nil)); err != nil {
			return nil, err
		}
		return &out, nil
	}
}

func (n *testNet) setHung(id int32, hung bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hung[id] = hung
}

// inlineRanges reads the file ranges of a ServeReplicaFetchRanges answer
// into its partitions' RecordBatches, as the broker's connection puts
// them on the wire, and releases them.
func inlineRanges(resp *kmsg.FetchResponse, ranges []FetchRange) (*kmsg.FetchResponse, error) {
	var err error
	for _, rg := range ranges {
		p := &resp.Topics[rg.Topic].Partitions[rg.Partition]
		if len(p.RecordBatches) != 0 {
			err = errors.Join(err, fmt.Errorf("replica test: partition %d has both records and a range", p.Partition))
		}
		buf := make([]byte, rg.Slice.Length)
		if _, rerr := rg.Slice.File.ReadAt(buf, rg.Slice.Offset); rerr != nil {
			err = errors.Join(err, rerr)
		}
		p.RecordBatches = buf
		rg.Slice.Release()
	}
	return resp, err
}

func (n *testNet) setDown(id int32, down bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.down[id] = down
}

// testLogWriter sends the managers' logs to t.Log.
type testLogWriter struct{ t testing.TB }

func (w testLogWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

// lazyISR forwards to the controller once it exists (the managers are
// built before it, since New calls OnChange).
// A test may set the cluster's isrHook to answer some AlterPartitions
// itself (handled true).
type lazyISR struct{ c *cluster }

func (l lazyISR) AlterPartition(ctx context.Context, req controller.AlterPartition) (controller.Partition, int16, error) {
	l.c.hookMu.Lock()
	hook := l.c.isrHook
	l.c.hookMu.Unlock()
	if hook != nil {
		if got, code, err, handled := hook(ctx, req); handled {
			return got, code, err
		}
	}
	return LocalISRChanger{Controller: func() *controller.Controller { return l.c.ctrl }}.AlterPartition(ctx, req)
}

type cluster struct {
	t      testing.TB
	ctrl   *controller.Controller
	net    *testNet
	logs   map[int32]*storage.Manager
	nodes  map[int32]*Manager
	topic  controller.Uuid
	minISR int

	hookMu  sync.Mutex
	isrHook func(context.Context, controller.AlterPartition) (controller.Partition, int16, error, bool)
}

const testTopic = "t"

var tp0 = storage.TopicPartition{Topic: testTopic, Partition: 0}

// newCluster starts three nodes replicating topic "t" (one partition,
// replicas 1,2,3, leader 1) with the given min.insync.replicas, logging
// to t.Log, and settles them (inside a synctest bubble).
func newCluster(t *testing.T, minISR int) *cluster {
	c := startCluster(t, minISR, "", func(id int32) *slog.Logger {
		return slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", id)
	})
	c.settle()
	return c
}

// startCluster is newCluster without the settling, with each node's
// logger from logger; the logs are in memory, or under dataDir on the OS
// file system when it is not "".
func startCluster(t testing.TB, minISR int, dataDir string, logger func(id int32) *slog.Logger) *cluster {
	c := &cluster{t: t, net: &testNet{nodes: map[int32]*Manager{}, down: map[int32]bool{}, hung: map[int32]bool{}, closed: make(chan struct{})},
		logs: map[int32]*storage.Manager{}, nodes: map[int32]*Manager{}, minISR: minISR}
	for id := int32(1); id <= 3; id++ {
		var fs vfs.FS = vfs.NewMem()
		dir := fmt.Sprintf("/node%d", id)
		if dataDir != "" {
			fs, dir = vfs.OS, filepath.Join(dataDir, dir)
		}
		logs, err := storage.OpenManager(storage.ManagerOptions{FS: fs, Dirs: []string{dir}, Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		c.logs[id] = logs
		c.nodes[id] = NewManager(Options{
			NodeID: id, Logs: logs, ISR: lazyISR{c},
			MinInsyncReplicas: func(*controller.Topic) int { return minISR },
			ReplicaLagTimeMax: 10 * time.Second,
			Fetch:             c.net.fetchFrom(id),
			Logger:            logger(id),
		})
		c.net.nodes[id] = c.nodes[id]
	}
	t.Cleanup(c.close)
	ctrl, err := controller.New(controller.Options{
		NodeID: 1, ClusterID: "replica-test", Log: controller.NewMemLog(), Logger: slog.New(slog.DiscardHandler),
		OnChange: c.onChange,
	})
	if err != nil {
		t.Fatal(err)
	}
	c.ctrl = ctrl
	t.Cleanup(ctrl.Close)
	for id := int32(1); id <= 3; id++ {
		if err := ctrl.RegisterBroker(controller.Broker{ID: id, Host: "localhost", Port: 9090 + id}); err != nil {
			t.Fatal(err)
		}
	}
	res := ctrl.CreateTopics([]controller.CreateTopic{{Name: testTopic, NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2, 3}}}}, false)
	if res[0].ErrorCode != 0 {
		t.Fatalf("create topic: %+v", res[0])
	}
	c.topic = res[0].ID
	return c
}

// settle lets the fake clock pass the fetch backoff and long-poll wait,
// then waits until every goroutine of the bubble is blocked: a follower
// that fetched before its leader applied the image (UNKNOWN_TOPIC_ID, as
// between real brokers) has retried by then.
func (c *cluster) settle() {
	time.Sleep(2 * time.Second)
	synctest.Wait()
}

// onChange is each node's LogSyncer and Manager.Apply.
func (c *cluster) onChange(prev, next *controller.Image) {
	for id, m := range c.nodes {
		for _, t := range next.Topics {
			for _, p := range t.Partitions {
				tp := storage.TopicPartition{Topic: t.Name, Partition: p.Partition}
				if _, ok := c.logs[id].Log(tp); !ok && slices.Contains(p.Replicas, id) {
					if _, err := c.logs[id].CreateLog(tp, t.ID, storage.DefaultLogConfig()); err != nil {
						c.t.Errorf("node %d: create log: %v", id, err)
					}
				}
			}
		}
		m.Apply(prev, next)
	}
}

func (c *cluster) close() {
	close(c.net.closed)
	for _, m := range c.nodes {
		m.Close()
	}
	if c.ctrl != nil {
		c.ctrl.Close()
	}
	for _, l := range c.logs {
		l.Close()
	}
}

func (c *cluster) part(id int32) *Partition {
	c.t.Helper()
	p, ok := c.nodes[id].Partition(tp0)
	if !ok {
		c.t.Fatalf("node %d does not host %v", id, tp0)
	}
	return p
}

func (c *cluster) image() controller.Partition { return c.ctrl.Image().Topics[testTopic].Partitions[0] }

// produce appends n records on node id as leader; it returns the leader
// epoch and the offset to wait for (last offset + 1).
func (c *cluster) produce(id int32, acks int16, n int) (int32, int64, int16) {
	c.t.Helper()
	recs := make([]wire.Record, n)
	for i := range recs {
		recs[i] = wire.Record{Value: fmt.Appendf(nil, "v%d", i)}
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(), Records: recs})
	if err != nil {
		c.t.Fatal(err)
	}
	info, epoch, code, err := c.part(id).AppendAsLeader(acks, func(l *storage.Log, e int32) (storage.AppendInfo, error) {
		wire.SetPartitionLeaderEpoch(batch, e)
		return l.Append(batch)
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return epoch, info.LastOffset + 1, code
}

func (c *cluster) leo(id int32) int64 { return c.part(id).Log().LogEndOffset() }
func (c *cluster) hw(id int32) int64  { return c.part(id).HighWatermark() }

// TestReplication: the leader appends, the followers copy, the high
// watermark advances only once the whole ISR has the records, and a
// waiting acks=-1 produce wakes.
func TestReplication(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2)
		synctest.Wait()
		if r := c.part(1).State().Role; r != RoleLeader {
			t.Fatalf("node 1 is %v", r)
		}
		for _, id := range []int32{2, 3} {
			if r := c.part(id).State().Role; r != RoleFollower {
				t.Fatalf("node %d is %v", id, r)
			}
		}
		// Node 3 is cut off: the HW stops at what node 2 and the
		// leader have... no: the ISR is {1,2,3}, so it stops at 0.
		c.net.setDown(3, true)
		epoch, want, code := c.produce(1, -1, 5)
		if code != 0 {
			t.Fatalf("produce: %d", code)
		}
		done := make(chan int16, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			done <- c.part(1).WaitForHighWatermark(ctx, epoch, want)
		}()
		synctest.Wait()
		if c.leo(2) != 5 || c.leo(3) != 0 {
			t.Fatalf("LEOs: node 2 %d, node 3 %d", c.leo(2), c.leo(3))
		}
		if c.hw(1) != 0 {
			t.Fatalf("HW %d advanced past node 3, which is in the ISR", c.hw(1))
		}
		select {
		case code := <-done:
			t.Fatalf("acks=-1 answered %d before the ISR had the batch", code)
		default:
		}
		c.net.setDown(3, false)
		code = <-done
		synctest.Wait()
		if code != 0 {
			t.Fatalf("acks=-1 wait: %d", code)
		}
		for id := int32(1); id <= 3; id++ {
			if c.leo(id) != 5 || c.hw(id) != 5 {
				t.Fatalf("node %d: LEO %d HW %d, want 5 5", id, c.leo(id), c.hw(id))
			}
		}
		// Records are the leader's bytes, offsets and epochs.
		// Node 2 was served file ranges, node 3 copies (testNet).
		lb, _ := c.part(1).Log().Read(0, 1<<20, 5, true)
		for _, id := range []int32{2, 3} {
			if fb, _ := c.part(id).Log().Read(0, 1<<20, 5, true); string(lb) != string(fb) {
				t.Fatalf("node %d's bytes differ from the leader's", id)
			}
		}
		// A produce that times out: node 2 and 3 are down.
		c.net.setDown(2, true)
		c.net.setDown(3, true)
		epoch, want, _ = c.produce(1, -1, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if code := c.part(1).WaitForHighWatermark(ctx, epoch, want); code != kerr.RequestTimedOut.Code {
			t.Fatalf("timed out wait: %d", code)
		}
	})
}

// TestISRShrinkAndExpand: a follower that stops fetching leaves the ISR
// after replica.lag.time.max.ms through AlterPartition, the HW then
// advances without it, acks=-1 below min.insync.replicas is refused; the
// follower rejoins once caught up.
func TestISRShrinkAndExpand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2)
		synctest.Wait()
		c.net.setDown(3, true)
		epoch, want, _ := c.produce(1, -1, 3)
		done := make(chan int16, 1)
		go func() {
			done <- c.part(1).WaitForHighWatermark(context.Background(), epoch, want)
		}()
		start := time.Now()
		if code := <-done; code != 0 {
			t.Fatalf("acks=-1 after shrink: %d", code)
		}
		// The wait ended because the ISR shrank: after the lag time
		// (10 s), within one check interval (5 s).
		if el := time.Since(start); el < 10*time.Second || el > 16*time.Second {
			t.Fatalf("ISR shrink after %v", el)
		}
		synctest.Wait()
		if isr := c.image().ISR; !slices.Equal(isr, []int32{1, 2}) {
			t.Fatalf("image ISR %v, want [1 2]", isr)
		}
		if st := c.part(1).State(); !slices.Equal(st.ISR, []int32{1, 2}) || st.PendingISR != nil {
			t.Fatalf("leader ISR %v pending %v", st.ISR, st.PendingISR)
		}
		if shrinks, expands := c.nodes[1].ISRChanges(); shrinks != 1 || expands != 0 {
			t.Fatalf("leader counted %d shrinks, %d expands; want 1, 0", shrinks, expands)
		}
		// Node 2 goes too: ISR {1} < min.insync.replicas 2.
		c.net.setDown(2, true)
		time.Sleep(16 * time.Second) // let the lag time pass (fake clock)
		synctest.Wait()
		if isr := c.image().ISR; !slices.Equal(isr, []int32{1}) {
			t.Fatalf("image ISR %v, want [1]", isr)
		}
		if _, _, code := c.produce(1, -1, 1); code != kerr.NotEnoughReplicas.Code {
			t.Fatalf("acks=-1 with ISR below min: %d", code)
		}
		if _, _, code := c.produce(1, 1, 1); code != 0 {
			t.Fatalf("acks=1 with ISR below min: %d", code)
		}
		// Both come back and catch up: the ISR grows back.
		c.net.setDown(2, false)
		c.net.setDown(3, false)
		time.Sleep(2 * time.Second) // fetch backoff (fake clock)
		synctest.Wait()
		if isr := c.image().ISR; len(isr) != 3 {
			t.Fatalf("image ISR %v after catching up", isr)
		}
		// The counters behind kafka_server_replicamanager_isrshrinks_total
		// and _isrexpands_total: two shrinks, two expands (one per
		// follower coming back), all on the leader.
		if shrinks, expands := c.nodes[1].ISRChanges(); shrinks != 2 || expands != 2 {
			t.Fatalf("leader counted %d shrinks, %d expands; want 2, 2", shrinks, expands)
		}
		if shrinks, expands := c.nodes[2].ISRChanges(); shrinks != 0 || expands != 0 {
			t.Fatalf("follower counted %d shrinks, %d expands", shrinks, expands)
		}
		for id := int32(1); id <= 3; id++ {
			if c.leo(id) != 4 || c.hw(id) != 4 {
				t.Fatalf("node %d: LEO %d HW %d", id, c.leo(id), c.hw(id))
			}
		}
	})
}

// TestUnderMinISRHoldsHighWatermark: Kafka 4.x's strict min ISR rule
// (KIP-966). An acks=-1 produce waits while follower 3 is down; the leader
// drops 3 from the ISR, which leaves it below min.insync.replicas=3, so the
// high watermark stays below the record although both ISR members have it:
// the produce times out (REQUEST_TIMED_OUT, as Kafka's DelayedProduce; it
// used to answer NOT_ENOUGH_REPLICAS_AFTER_APPEND with the record already
// exposed), an acks=1 record is not exposed either, and both become visible
// once 3 is back in the ISR.
func TestUnderMinISRHoldsHighWatermark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3)
		synctest.Wait()
		c.net.setDown(3, true)
		epoch, want, code := c.produce(1, -1, 1)
		if code != 0 {
			t.Fatal(code)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if code := c.part(1).WaitForHighWatermark(ctx, epoch, want); code != kerr.RequestTimedOut.Code {
			t.Fatalf("wait: %d, want REQUEST_TIMED_OUT", code)
		}
		if isr := c.image().ISR; !slices.Equal(isr, []int32{1, 2}) {
			t.Fatalf("ISR %v, want [1 2]", isr)
		}
		_, want, _ = c.produce(1, 1, 1)
		c.settle()
		if c.leo(2) != want || c.hw(1) != 0 {
			t.Fatalf("under min ISR: follower 2 LEO %d, leader HW %d, want %d and 0", c.leo(2), c.hw(1), want)
		}
		c.net.setDown(3, false)
		c.settle()
		if isr := c.image().ISR; len(isr) != 3 || c.hw(1) != want {
			t.Fatalf("after 3 is back: ISR %v, HW %d, want 3 members and %d", isr, c.hw(1), want)
		}
	})
}

// TestDivergence: the old leader wrote records no follower got, a new
// leader with a shorter log takes over and writes its own; the old leader
// comes back as follower, truncates its extra records (DivergingEpoch) and
// ends with the new leader's log.
func TestDivergence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 1)
		synctest.Wait()
		c.produce(1, -1, 4)
		synctest.Wait()
		if c.hw(1) != 4 || c.leo(2) != 4 {
			t.Fatalf("before: HW %d, node 2 LEO %d", c.hw(1), c.leo(2))
		}
		c.net.setDown(1, true)
		c.produce(1, 1, 3) // offsets 4-6, only on node 1
		c.produce(1, 1, 2) // 7-8
		if err := c.ctrl.FenceBroker(1, true); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		ip := c.image()
		if ip.Leader == 1 || ip.Leader < 0 {
			t.Fatalf("leader after fencing 1: %d", ip.Leader)
		}
		newLeader := ip.Leader
		if _, _, code := c.produce(newLeader, -1, 2); code != 0 { // offsets 4-5 in the new epoch
			t.Fatalf("produce to new leader: %d", code)
		}
		if _, _, code := c.produce(1, 1, 1); code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("old leader still takes writes: %d", code)
		}
		synctest.Wait()
		if err := c.ctrl.FenceBroker(1, false); err != nil {
			t.Fatal(err)
		}
		c.net.setDown(1, false)
		time.Sleep(2 * time.Second) // fetch backoff
		synctest.Wait()
		if c.leo(1) != 6 || c.leo(newLeader) != 6 {
			t.Fatalf("LEOs: old leader %d, new leader %d", c.leo(1), c.leo(newLeader))
		}
		a, _ := c.part(1).Log().Read(0, 1<<20, 6, true)
		b, _ := c.part(newLeader).Log().Read(0, 1<<20, 6, true)
		if string(a) != string(b) {
			t.Fatal("old leader's log differs from the new leader's after truncation")
		}
		if e, off := c.part(1).Log().EndOffsetForEpoch(ip.LeaderEpoch - 1); off != 4 {
			t.Fatalf("old epoch ends at %d (epoch %d), want 4", off, e)
		}
		if isr := c.image().ISR; len(isr) != 3 {
			t.Fatalf("ISR %v after the old leader caught up", isr)
		}
	})
}

// TestReplicaFetchOfClosedLog: a follower's fetch that finds the leader's
// log closed under it (the partition being deleted or stopped, its
// directory online) is answered NOT_LEADER_OR_FOLLOWER, not
// KAFKA_STORAGE_ERROR: a topic deletion used to log "replica fetch read
// failed" at ERROR on the leader, and the followers took it for a disk
// failure.
func TestReplicaFetchOfClosedLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2)
		if _, _, code := c.produce(1, 1, 3); code != 0 {
			t.Fatalf("produce: %d", code)
		}
		synctest.Wait()
		if err := c.part(1).Log().Close(); err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(16)
		req.ReplicaState.ID = 2
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = testTopic, c.topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset, rp.LastFetchedEpoch = 0, -1, 0, -1
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		req.MaxBytes = 1 << 20
		for _, serve := range []func() *kmsg.FetchResponse{
			func() *kmsg.FetchResponse { return c.nodes[1].ServeReplicaFetch(context.Background(), req) },
			func() *kmsg.FetchResponse {
				resp, ranges := c.nodes[1].ServeReplicaFetchRanges(context.Background(), req)
				for _, rg := range ranges {
					rg.Slice.Release()
				}
				return resp
			},
		} {
			resp := serve()
			if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.NotLeaderForPartition.Code {
				t.Fatalf("fetch of a closed log: error code %d (%v), want NOT_LEADER_OR_FOLLOWER", got, kerr.ErrorForCode(got))
			}
		}
	})
}

// TestAcksAllCommitFetches counts the follower fetches one acks=-1
// commit takes on an idle cluster: each follower's parked fetch returns
// the batch, its next fetch reports its new log end (the second of them
// moves the high watermark and is answered at once, the first is woken by
// that move), and each follower parks a fetch again: four fetches issued,
// two per follower. More would be a wake-up storm (a parked fetch
// answered without anything new, again and again); fewer, a follower
// left without the new high watermark until replica.fetch.wait.max.ms.
func TestAcksAllCommitFetches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2)
		synctest.Wait()
		for round := range 3 {
			before := c.net.fetches.Load()
			epoch, want, code := c.produce(1, -1, 1)
			if code != 0 {
				t.Fatalf("produce: %d", code)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			code = c.part(1).WaitForHighWatermark(ctx, epoch, want)
			cancel()
			if code != 0 {
				t.Fatalf("acks=-1 wait: %d", code)
			}
			synctest.Wait()
			if got := c.net.fetches.Load() - before; got != 4 {
				t.Fatalf("commit %d took %d follower fetches, want 4", round, got)
			}
			for id := int32(2); id <= 3; id++ {
				if c.hw(id) != want {
					t.Fatalf("commit %d: follower %d HW %d, want %d at once", round, id, c.hw(id), want)
				}
			}
		}
	})
}
