package compattests

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/faults"
	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
	"github.com/samsa-broker/samsa/wire"
)

// TestLibrdkafkaImplicitAckLoss reproduces docs/DURABILITY.md finding 17
// deterministically, against samsa and against Kafka 4.4: an idempotent
// confluent-kafka-go (librdkafka 2.11.1) producer reports a record
// delivered, offset -1001, that no broker ever appended.
//
// The chain: the producer's first batch to a partition (sequence 0) is
// refused with nothing appended — here UNKNOWN_TOPIC_OR_PARTITION, since
// the topic was deleted while a frame proxy held the batch; in the fault
// run it was most likely the same answer, or NOT_LEADER_OR_FOLLOWER, from
// a leader that had not yet taken up the new topic. Its second batch
// (sequence 1) goes out while the first is in flight: the proxy holds the
// first batch's answer, and the second batch until the topic is back. The
// broker has no state for the producer, so it accepts sequence 1 as the
// producer's first batch: Kafka has accepted any sequence there since 2.5
// (KIP-360; ProducerAppendInfo.checkSequence), and samsa does the same
// (broker/handlers/producer_state.go checkBatch). librdkafka then sees a
// success for a batch while an earlier message is still unacknowledged and
// reports that message delivered without an offset
// (rd_kafka_handle_idempotent_Produce_success -> rd_kafka_dr_implicit_ack),
// never sending it again: it assumes the broker enforces sequence order,
// which a broker without state for the producer does not. The proxy only
// orders frames; every answer is the broker's own.
//
// Both brokers answer the same, so the loss is librdkafka's; the test pins
// the brokers' answers and librdkafka's behaviour, and checks that
// faults.RdkEvidence finds the chain in the producer's own debug log.
func TestLibrdkafkaImplicitAckLoss(t *testing.T) {
	t.Parallel()
	t.Run("samsa", func(t *testing.T) {
		t.Parallel()
		b := harness.Start(t, harness.Options{})
		checkImplicitAckLoss(t, runImplicitAck(t, b.Addr))
	})
	t.Run("kafka", func(t *testing.T) {
		t.Parallel()
		k := kafkaref.Start(t, kafkaref.Options{})
		checkImplicitAckLoss(t, runImplicitAck(t, k.Bootstrap()))
	})
}

// implicitAckOutcome is what one broker and librdkafka did.
type implicitAckOutcome struct {
	firstCode  int16 // the broker's answer to the first batch (sequence 0)
	secondSeq  int32 // the base sequence of the batch held before the broker
	secondCode int16 // the broker's answer to it
	first      confluentDelivery
	second     confluentDelivery
	log        []string // the partition's records, in offset order
	proof      string   // RdkEvidence's description of the chain
	proven     bool
}

// confluentDelivery is one delivery report of librdkafka.
type confluentDelivery struct {
	err    string
	offset int64
}

// checkImplicitAckLoss checks one broker's outcome: the same for samsa and
// Kafka 4.4.
func checkImplicitAckLoss(t *testing.T, o implicitAckOutcome) {
	t.Helper()
	if o.firstCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("first batch answered %v, want UNKNOWN_TOPIC_OR_PARTITION", kerr.ErrorForCode(o.firstCode))
	}
	if o.secondSeq != 1 || o.secondCode != 0 {
		t.Errorf("second batch (base sequence %d) answered %v, want sequence 1 accepted", o.secondSeq, kerr.ErrorForCode(o.secondCode))
	}
	if o.second != (confluentDelivery{offset: 1}) {
		t.Errorf("second record reported %+v, want delivered at offset 1", o.second)
	}
	// librdkafka's implicit ack: delivered, offset RD_KAFKA_OFFSET_INVALID.
	if o.first != (confluentDelivery{offset: int64(kafka.OffsetInvalid)}) {
		t.Errorf("first record reported %+v, want delivered at offset %d (librdkafka's implicit ack; if a newer librdkafka "+
			"resends or fails it instead, finding 17 is fixed upstream: update this test and docs/DURABILITY.md)", o.first, kafka.OffsetInvalid)
	}
	if want := []string{"probe", "b"}; !slices.Equal(o.log, want) {
		t.Errorf("partition holds %q, want %q (the first record never appended)", o.log, want)
	}
	if !o.proven {
		t.Errorf("faults.RdkEvidence does not find the chain in the producer's debug log")
	} else {
		t.Logf("debug log: %s", o.proof)
	}
}

// runImplicitAck plays the chain against the broker at addr through a
// frame proxy.
func runImplicitAck(t *testing.T, addr string) implicitAckOutcome {
	ctx := testContext(t, 3*time.Minute)
	_, adm := newAdmin(t, addr)
	const topic = "implicit-ack"
	createTopic := func() {
		t.Helper()
		resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
		if err != nil || resp.Err != nil {
			t.Fatalf("CreateTopic %s: %v / %v", topic, err, resp.Err)
		}
		waitTopicReady(t, ctx, adm, topic, 1)
	}
	createTopic()

	type frameKey struct {
		conn int
		corr int32
	}
	var (
		mu              sync.Mutex
		firstKey        *frameKey
		secondKey       *frameKey
		firstHeld       = make(chan struct{}, 1) // the first batch, held before the broker
		releaseFirst    = newGate()
		firstAnswered   = make(chan int16, 1) // its code; the answer is held
		releaseAnswers  = newGate()
		secondHeld      = make(chan int32, 1) // the second batch's base sequence, held
		releaseSecond   = newGate()
		secondAnswered  = make(chan int16, 1)
		firstSentTwice  bool
		unexpectedFrame string
	)
	hooks := frameHooks{
		request: func(conn int, hdr wire.RequestHeader, req kmsg.Request) <-chan struct{} {
			pr, ok := req.(*kmsg.ProduceRequest)
			if !ok {
				return nil
			}
			seq, ok := produceBaseSequence(pr, topic)
			if !ok {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			k := &frameKey{conn, hdr.CorrelationID}
			switch {
			case firstKey == nil && seq == 0:
				firstKey = k
				firstHeld <- struct{}{}
				return releaseFirst.ch
			case firstKey != nil && secondKey == nil && seq != 0:
				secondKey = k
				secondHeld <- seq
				return releaseSecond.ch
			case secondKey == nil:
				firstSentTwice = true // not the chain under test
			}
			return nil
		},
		response: func(conn int, hdr wire.RequestHeader, body []byte) <-chan struct{} {
			if hdr.APIKey != (&kmsg.ProduceRequest{}).Key() {
				return nil
			}
			code, err := produceResponseCode(hdr.APIVersion, body)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				unexpectedFrame = err.Error()
			}
			k := frameKey{conn, hdr.CorrelationID}
			switch {
			case firstKey != nil && k == *firstKey:
				firstAnswered <- code
				return releaseAnswers.ch
			case secondKey != nil && k == *secondKey:
				secondAnswered <- code
			}
			return nil
		},
	}
	proxy := startFrameProxy(t, addr, hooks)
	// The proxy holds frames for seconds: far below librdkafka's timeouts.
	// No auto-creation: the topic comes back only when the test creates it.
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers":        proxy.Addr(),
		"enable.idempotence":       true,
		"acks":                     "all",
		"linger.ms":                0,
		"allow.auto.create.topics": false,
		"request.timeout.ms":       150000,
		"socket.timeout.ms":        150000,
		"message.timeout.ms":       300000,
		"debug":                    "eos,msg",
		"go.logs.channel.enable":   true,
	})
	if err != nil {
		t.Fatalf("kafka.NewProducer: %v", err)
	}
	var (
		logMu      sync.Mutex
		evidence   = &faults.RdkEvidence{Topic: topic}
		batchLines []string // for the failure message
	)
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		for e := range p.Logs() {
			logMu.Lock()
			evidence.AddLine(e.Message)
			if strings.Contains(e.Message, "MessageSet") || strings.Contains(e.Message, "implicitly") {
				batchLines = append(batchLines, e.Tag+" "+e.Message)
			}
			logMu.Unlock()
		}
	}()
	closed := false
	closeProducer := func() {
		if !closed {
			closed = true
			p.Close()
			<-logsDone
		}
	}
	defer closeProducer()
	defer func() { // a failed test must not leave librdkafka waiting
		releaseFirst.open()
		releaseSecond.open()
		releaseAnswers.open()
	}()

	var o implicitAckOutcome
	deliveries := make(chan kafka.Event, 2)
	topicName := topic
	produce := func(v string) {
		t.Helper()
		if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topicName, Partition: 0},
			Value: []byte(v)}, deliveries); err != nil {
			t.Fatalf("confluent Produce %q: %v", v, err)
		}
	}
	await := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s: %v (unexpected frame: %q)", what, ctx.Err(), unexpectedFrame)
		}
	}
	probe := func(want int16) {
		t.Helper()
		pollProduce(t, ctx, want, func(ctx context.Context) (int16, error) {
			return produceByName(ctx, addr, topic, "probe")
		})
	}

	produce("a")
	await("the first batch never came", firstHeld)
	// The topic goes away under the held batch: the broker refuses it
	// with nothing appended.
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatalf("DeleteTopics: %v", err)
	}
	waitTopicGone(t, ctx, adm, topic)
	probe(kerr.UnknownTopicOrPartition.Code)
	releaseFirst.open()
	select {
	case o.firstCode = <-firstAnswered:
	case <-ctx.Done():
		t.Fatalf("no answer to the first batch: %v", ctx.Err())
	}
	produce("b")
	select {
	case o.secondSeq = <-secondHeld:
	case <-ctx.Done():
		t.Fatalf("no second batch while the first was in flight: %v", ctx.Err())
	}
	// The topic is back, empty, with no state for the producer.
	createTopic()
	probe(0)
	releaseSecond.open()
	releaseAnswers.open()
	select {
	case o.secondCode = <-secondAnswered:
	case <-ctx.Done():
		t.Fatalf("no answer to the second batch: %v", ctx.Err())
	}
	for range 2 {
		select {
		case e := <-deliveries:
			m, ok := e.(*kafka.Message)
			if !ok {
				t.Fatalf("unexpected delivery event %v", e)
			}
			d := confluentDelivery{offset: int64(m.TopicPartition.Offset)}
			if m.TopicPartition.Error != nil {
				d.err = m.TopicPartition.Error.Error()
			}
			switch string(m.Value) {
			case "a":
				o.first = d
			case "b":
				o.second = d
			}
		case <-ctx.Done():
			t.Fatalf("delivery reports: %v", ctx.Err())
		}
	}
	if n := p.Flush(30_000); n != 0 {
		t.Errorf("%d messages still queued after a flush", n)
	}
	// The log reaches Logs() on its own path, and Close drops what has
	// not been forwarded yet: wait for the chain's lines first (bounded).
	proven := func() bool {
		logMu.Lock()
		defer logMu.Unlock()
		o.proof, o.proven = evidence.ProvesImplicitAck(topic, 0, 1)
		return o.proven
	}
	logWait := time.NewTicker(50 * time.Millisecond)
	for logDeadline := time.Now().Add(30 * time.Second); !proven() && time.Now().Before(logDeadline); {
		<-logWait.C
	}
	logWait.Stop()
	closeProducer()
	mu.Lock()
	if firstSentTwice {
		t.Errorf("the first batch was sent again before the second: not the chain under test")
	}
	mu.Unlock()

	hwm, values, err := fetchByName(ctx, addr, topic)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if int64(len(values)) != hwm {
		t.Errorf("fetch returned %d records below the high watermark %d", len(values), hwm)
	}
	o.log = values
	if !proven() {
		t.Logf("librdkafka's batch lines:\n%s", strings.Join(batchLines, "\n"))
	}
	return o
}

// produceByName sends value to partition 0 of topic at addr, acks=-1, as a
// Produce v8 (which names topics, as librdkafka 2.11 does: a topic deleted
// and created again keeps its name, not its id), and returns the
// partition's error code.
func produceByName(ctx context.Context, addr, topic, value string) (int16, error) {
	batch, err := wire.EncodeBatch(wire.BatchSpec{BaseTimestamp: time.Now().UnixMilli(), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []wire.Record{{Value: []byte(value)}}})
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	const version = 8
	body, err := roundTripV(ctx, addr, version, req)
	if err != nil {
		return 0, err
	}
	return produceResponseCode(version, body)
}

// fetchByName reads partition 0 of topic at addr from offset 0 with a
// Fetch v11 (by name, read_uncommitted, no wait) and returns the high
// watermark and the values returned.
func fetchByName(ctx context.Context, addr, topic string) (int64, []string, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes = -1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = 1<<20, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	const version = 11
	body, err := roundTripV(ctx, addr, version, req)
	if err != nil {
		return 0, nil, err
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		return 0, nil, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, nil, fmt.Errorf("fetch: %d topics in the response", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return 0, nil, kerr.ErrorForCode(p.ErrorCode)
	}
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Partition: 0}, &p, kgo.DefaultDecompressor(), nil)
	var values []string
	for _, r := range fp.Records {
		values = append(values, string(r.Value))
	}
	return p.HighWatermark, values, nil
}

// roundTripV sends req at version (a non-flexible one) on a connection of
// its own and returns the response body.
func roundTripV(ctx context.Context, addr string, version int16, req kmsg.Request) ([]byte, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(deadline)
	}
	if _, err := conn.Write(wire.AppendRequest(nil, wire.RequestHeader{APIVersion: version, CorrelationID: 1}, req)); err != nil {
		return nil, err
	}
	frame, err := readFrame(conn) // size included
	if err != nil {
		return nil, err
	}
	if len(frame) < 8 {
		return nil, fmt.Errorf("response of %d bytes", len(frame))
	}
	return frame[8:], nil
}

// gate is a channel closed once.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// pollProduce sends a probe until the broker answers want, polling while
// it answers anything else (a deletion or creation takes effect when the
// broker applies it).
func pollProduce(t *testing.T, ctx context.Context, want int16, probe func(context.Context) (int16, error)) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		code, err := probe(ctx)
		if err == nil && code == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("probe never answered %v: last %v / %v", kerr.ErrorForCode(want), kerr.ErrorForCode(code), err)
		case <-tick.C:
		}
	}
}

// produceBaseSequence is the base sequence of the batch for partition 0 of
// topic in a Produce request (librdkafka 2.11 names topics: Produce v10 at
// most).
func produceBaseSequence(pr *kmsg.ProduceRequest, topic string) (int32, bool) {
	for _, rt := range pr.Topics {
		if rt.Topic != topic {
			continue
		}
		for _, rp := range rt.Partitions {
			if rp.Partition != 0 {
				continue
			}
			h, err := wire.ParseBatchHeader(rp.Records)
			if err != nil {
				return 0, false
			}
			return h.BaseSequence, true
		}
	}
	return 0, false
}

// produceResponseCode is the error code of the first partition of a
// Produce response body.
func produceResponseCode(version int16, body []byte) (int16, error) {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(version)
	if err := resp.ReadFrom(body); err != nil {
		return 0, fmt.Errorf("produce v%d response: %w", version, err)
	}
	if len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
		return 0, fmt.Errorf("produce v%d response without partitions", version)
	}
	return resp.Topics[0].Partitions[0].ErrorCode, nil
}
