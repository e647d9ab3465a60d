package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func produce(topic string, partitions int) (*kmsg.ProduceRequest, *kmsg.ProduceResponse) {
	req := kmsg.NewPtrProduceRequest()
	resp := kmsg.NewPtrProduceResponse()
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	st := kmsg.NewProduceResponseTopic()
	st.Topic = topic
	for p := 0; p < partitions; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Records = batch(3)
		rt.Partitions = append(rt.Partitions, rp)
		sp := kmsg.NewProduceResponseTopicPartition()
		sp.Partition = int32(p)
		st.Partitions = append(st.Partitions, sp)
	}
	req.Topics = append(req.Topics, rt)
	resp.Topics = append(resp.Topics, st)
	return req, resp
}

// batch is a v2 record batch header claiming n records, with no body.
func batch(n int) []byte {
	b := make([]byte, 61)
	b[11] = 49 // batch length: the header after the length field
	b[16] = 2  // magic
	b[60] = byte(n)
	return b
}

func TestCountRecords(t *testing.T) {
	two := append(batch(3), batch(4)...)
	for _, tc := range []struct {
		in   []byte
		want uint64
	}{{nil, 0}, {batch(3), 3}, {two, 7}, {two[:70], 3}} {
		if got := countRecords(tc.in); got != tc.want {
			t.Errorf("countRecords(%d bytes) = %d, want %d", len(tc.in), got, tc.want)
		}
	}
}

// TestObserveRequestAllocs: once a request name and topic were seen, the
// per-request hook allocates nothing.
func TestObserveRequestAllocs(t *testing.T) {
	m := New(Options{})
	req, resp := produce("t", 4)
	m.ObserveRequest(0, 9, req, resp, 0, time.Millisecond, 0)
	allocs := testing.AllocsPerRun(1000, func() {
		m.ObserveRequest(0, 9, req, resp, 0, time.Millisecond, 0)
	})
	if allocs != 0 {
		t.Fatalf("ObserveRequest allocates %v times per produce", allocs)
	}
	if got := m.requests.topic("t").messagesIn.Load(); got != 1002*4*3 {
		t.Fatalf("messagesIn %d", got)
	}
}

// TestErrorCounts counts every ErrorCode field, at any depth, and Kafka's
// rule for failed produces (NOT_LEADER_OR_FOLLOWER is not a failure).
func TestErrorCounts(t *testing.T) {
	m := New(Options{})
	req, resp := produce("t", 3)
	resp.Topics[0].Partitions[1].ErrorCode = kerr.NotLeaderForPartition.Code
	resp.Topics[0].Partitions[2].ErrorCode = kerr.InvalidTimestamp.Code
	m.ObserveRequest(0, 9, req, resp, 0, time.Millisecond, 0)
	r := m.requests
	if got := r.stats(0).none.Load(); got != 1 {
		t.Errorf("NONE %d, want 1", got)
	}
	for _, code := range []int16{kerr.NotLeaderForPartition.Code, kerr.InvalidTimestamp.Code} {
		if c := r.errors.m[errorKey{0, code}]; c == nil || c.Load() != 1 {
			t.Errorf("error %s not counted once", errorName(code))
		}
	}
	ts := r.topic("t")
	if ts.failedProduce.Load() != 1 || ts.totalProduce.Load() != 3 || ts.messagesIn.Load() != 3 {
		t.Errorf("failed %d total %d messages %d; want 1, 3, 3", ts.failedProduce.Load(), ts.totalProduce.Load(), ts.messagesIn.Load())
	}
	// A response type the fast paths do not know: nested ErrorCodes.
	dg := kmsg.NewPtrDescribeGroupsResponse()
	for _, code := range []int16{0, kerr.GroupIDNotFound.Code} {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.ErrorCode = code
		dg.Groups = append(dg.Groups, g)
	}
	m.ObserveRequest(15, 5, kmsg.NewPtrDescribeGroupsRequest(), dg, 0, time.Millisecond, 0)
	if r.stats(15).none.Load() != 1 || r.errors.m[errorKey{15, kerr.GroupIDNotFound.Code}].Load() != 1 {
		t.Error("DescribeGroups error codes not counted")
	}
	if requestName(15) != "DescribeGroups" || requestName(22) != "InitProducerId" || requestName(fetchFollower) != "FetchFollower" {
		t.Error("request names differ from Kafka's")
	}
}

// TestUnknownTopicsNotKept: produce requests naming topics that do not
// exist count in the all-topics series only; the topic map stays empty.
func TestUnknownTopicsNotKept(t *testing.T) {
	m := New(Options{TopicExists: func(name string) bool { return name == "real" }})
	for i := 0; i < 100; i++ {
		req, resp := produce(fmt.Sprintf("made-up-%d", i), 1)
		resp.Topics[0].Partitions[0].ErrorCode = kerr.UnknownTopicOrPartition.Code
		m.ObserveRequest(0, 9, req, resp, 0, time.Millisecond, 0)
	}
	req, resp := produce("real", 1)
	m.ObserveRequest(0, 9, req, resp, 0, time.Millisecond, 0)
	if n := len(m.requests.topics.m); n != 1 {
		t.Fatalf("%d topics kept, want 1", n)
	}
	if got := m.requests.allTopics.totalProduce.Load(); got != 101 {
		t.Fatalf("all-topics total produce %d, want 101", got)
	}
}

// BenchmarkObserveProduce is the per-request cost on the produce path
// (one topic, 4 partitions).
func BenchmarkObserveProduce(b *testing.B) {
	m := New(Options{TopicExists: func(string) bool { return true }})
	req, resp := produce("t", 4)
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveRequest(0, 9, req, resp, time.Microsecond, time.Millisecond, 0)
	}
}

func TestReadyz(t *testing.T) {
	ready := errors.New("broker 1 is fenced")
	s, err := Listen(HTTPOptions{Addr: "127.0.0.1:0", Ready: func() error { return ready }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + s.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "fenced") {
		t.Fatalf("/readyz: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz: %d", code)
	}
	if code, _ := get("/metrics"); code != http.StatusNotFound {
		t.Fatalf("/metrics without Metrics: %d", code)
	}
}

func TestBucketOf(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<20; us++ {
		b := bucketOf(us)
		lo, width := bucketBounds(b)
		if float64(us) < lo || float64(us) >= lo+width {
			t.Fatalf("%d µs in bucket %d = [%v, %v)", us, b, lo, lo+width)
		}
		if b < prev || b > prev+1 {
			t.Fatalf("%d µs: bucket %d after %d", us, b, prev)
		}
		prev = b
	}
	if b := bucketOf(1 << 62); b != numBuckets-1 {
		t.Fatalf("huge value in bucket %d", b)
	}
}

// TestLatencyWindow: quantiles are within the bucket error of the true
// ones, and observations older than the window no longer count.
func TestLatencyWindow(t *testing.T) {
	var l latency
	start := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC).UnixNano()
	for i := 1; i <= 1000; i++ { // 1 ms ... 1000 ms, uniform
		l.observe(time.Duration(i)*time.Millisecond, start)
	}
	qs := []float64{0.5, 0.99, 0.999}
	got, ok := l.quantiles(start, qs)
	if !ok {
		t.Fatal("empty window")
	}
	for i, want := range []float64{500, 990, 999} {
		if got[i] < want*0.9 || got[i] > want*1.1 {
			t.Errorf("quantile %v = %v ms, want about %v", qs[i], got[i], want)
		}
	}
	// Six minutes later only new observations count.
	later := start + int64(6*time.Minute)
	l.observe(2*time.Millisecond, later)
	got, _ = l.quantiles(later, qs)
	if got[2] > 2.5 {
		t.Errorf("old observations still counted: p99.9 %v ms", got[2])
	}
	if l.count.Load() != 1001 {
		t.Errorf("count %d", l.count.Load())
	}
	if _, ok := l.quantiles(later+int64(10*time.Minute), qs); ok {
		t.Error("window not empty after 10 idle minutes")
	}
}

// TestRemoteAndSendTimes: the handler's wait on others is RemoteTimeMs and
// the rest of its time LocalTimeMs; ObserveResponseSend fills
// ResponseSendTimeMs of the slot ObserveRequest returned (issue 17's
// request metrics).
func TestRemoteAndSendTimes(t *testing.T) {
	now := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	m := New(Options{TopicExists: func(string) bool { return true }, Now: func() time.Time { return now }})
	req, resp := produce("t", 1)
	slot := m.ObserveRequest(0, 9, req, resp, time.Millisecond, 100*time.Millisecond, 80*time.Millisecond)
	m.ObserveResponseSend(slot, 7*time.Millisecond)
	s := m.requests.stats(slot)
	qs := []float64{0.5}
	for kind, want := range map[timeKind]float64{localTime: 20, remoteTime: 80, responseSendTime: 7, totalTime: 101, queueTime: 1} {
		got, ok := s.times[kind].quantiles(now.UnixNano(), qs)
		if !ok || got[0] < want*0.85 || got[0] > want*1.15 {
			t.Errorf("time kind %d: p50 %v ms, want about %v", kind, got, want)
		}
	}
	// A remote time beyond the handler's time is capped, never negative local.
	slot = m.ObserveRequest(0, 9, req, resp, 0, time.Millisecond, time.Second)
	if got, _ := s.times[localTime].quantiles(now.UnixNano(), []float64{0}); got[0] < 0 {
		t.Errorf("negative local time %v", got)
	}
	m.ObserveResponseSend(-1, time.Second) // no slot: ignored, no panic
}

// TestThrottleTime: the throttle a client quota put in a response is
// RequestMetrics ThrottleTimeMs of its request.
func TestThrottleTime(t *testing.T) {
	now := time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC)
	m := New(Options{TopicExists: func(string) bool { return true }, Now: func() time.Time { return now }})
	req, resp := produce("t", 1)
	resp.SetThrottle(250)
	slot := m.ObserveRequest(0, 9, req, resp, 0, time.Millisecond, 0)
	got, ok := m.requests.stats(slot).times[throttleTime].quantiles(now.UnixNano(), []float64{0.5})
	if !ok || got[0] < 0.85*250 || got[0] > 1.15*250 {
		t.Errorf("ThrottleTimeMs p50 %v, want about 250", got)
	}
}
