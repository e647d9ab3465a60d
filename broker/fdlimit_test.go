package broker

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// TestFileBudget: issue 11 item 5, 20,000 partitions needed ~60,000 file
// descriptors and were accepted; the broker then could neither serve nor
// restart. Partitions beyond the open file limit are refused up front.
func TestFileBudget(t *testing.T) {
	if e := fileBudget(4096, 100, 900); e != nil {
		t.Fatalf("900 partitions refused with 3996 descriptors free: %v", e)
	}
	e := fileBudget(4096, 100, 1000)
	if e == nil || e.Code != kerr.PolicyViolation.Code || !strings.Contains(e.Message, "RLIMIT_NOFILE") {
		t.Fatalf("1000 partitions: %+v", e)
	}
	if e := fileBudget(1<<63, 100, 1<<30); e != nil {
		t.Fatal("unlimited limit refused")
	}
	if n, err := openFileCount(); err != nil || n <= 0 {
		t.Fatalf("openFileCount %d %v", n, err)
	}
}

// TestCreateTopicsRefusedOverFileLimit: the CreateTopics and
// CreatePartitions handlers ask the budget (validate_only too). A
// CreateTopics sent again for a topic it created gets
// TOPIC_ALREADY_EXISTS, as from Kafka: its partitions are not counted
// again (a client whose request timed out while a 5,000-partition
// topic's logs were created retried and got POLICY_VIOLATION).
func TestCreateTopicsRefusedOverFileLimit(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	// 500 descriptors open, and three per log that exists.
	n.srv.opts.Deps.PartitionFiles = func(k int) *controller.RequestError {
		return fileBudget(2000, 500+3*len(n.logs.Logs()), k)
	}
	c := dialRaw(t, n.Addrs()[0].String())
	create := func(parts int32, validate bool) int16 {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly = validate
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", parts, 1
		req.Topics = append(req.Topics, rt)
		resp, err := c.roundTrip(req, 5)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
	}
	if code := create(200, true); code != kerr.PolicyViolation.Code {
		t.Fatalf("validate_only 200 partitions: code %d", code)
	}
	if code := create(100, false); code != 0 {
		t.Fatalf("100 partitions: code %d", code)
	}
	if code := create(100, false); code != kerr.TopicAlreadyExists.Code {
		t.Fatalf("the same 100 partitions again: code %d, want TOPIC_ALREADY_EXISTS", code)
	}
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "t", 400
	req.Topics = append(req.Topics, rt)
	resp, err := c.roundTrip(req, 2)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode; code != kerr.PolicyViolation.Code {
		t.Fatalf("CreatePartitions to 400: code %d", code)
	}
}

// TestSuperviseLoopRestartsAfterPanic: issue 11 item 6, a panic in a
// background goroutine took the process down. The loop is logged and run
// again; a loop that returns normally is not.
func TestSuperviseLoopRestartsAfterPanic(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runs := 0
	superviseLoop(ctx, logger, "test", func(context.Context) {
		runs++
		if runs == 1 {
			panic("test: background bug")
		}
	})
	if runs != 2 || !strings.Contains(buf.String(), "panic in background loop") {
		t.Fatalf("runs %d, log %q", runs, buf.String())
	}
}
