// This file checks that idempotent producer state survives broker restarts on the
// real binary: a producer whose last acknowledged batch is retried after a clean stop
// or a kill -9 gets the original offsets back and nothing is appended twice, and a
// batch that skips sequences is OUT_OF_ORDER_SEQUENCE_NUMBER. The state comes back
// from the partition's .snapshot file plus the batches after it (see package storage),
// not from a replay of the whole log. Raw requests are used because a client never
// sends a retry on purpose.

package compattests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/wire"
)

// rawIdempotentProduce sends one idempotent batch of n records with the given
// sequence to topic/p and returns the partition's error code and base offset.
func rawIdempotentProduce(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, topicID [16]byte, p int32, pid int64, epoch int16, seq int32, n int) (int16, int64) {
	t.Helper()
	recs := make([]wire.Record, n)
	for i := range recs {
		recs[i] = wire.Record{Key: fmt.Appendf(nil, "seq-%d", int(seq)+i), Value: []byte("idempotent")}
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{
		BaseTimestamp: time.Now().UnixMilli(), ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Records: recs,
	})
	if err != nil {
		t.Fatalf("encode batch: %v", err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = topic, topicID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = p
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	// Right after a restart the client may still be reconnecting: retry transport
	// errors until ctx ends.
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			pr := resp.Topics[0].Partitions[0]
			return pr.ErrorCode, pr.BaseOffset
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Produce: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestIdempotentStateSurvivesRestart(t *testing.T) {
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 90*time.Second)
	topic := "idempotent-restart"
	cl, adm := newAdmin(t, b.Addr)
	// Small segments, so the log has several and the snapshot of a roll is used.
	segmentBytes := "16384"
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &segmentBytes}, topic); err != nil {
		t.Fatalf("create topic: %v", err)
	}
	waitTopicReady(t, ctx, adm, topic, 1)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("ListTopics: %v %v", err, details[topic].Err)
	}
	topicID := details[topic].ID

	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	if err != nil || init.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(init.ErrorCode))
	}
	pid, epoch := init.ProducerID, init.ProducerEpoch

	// 40 batches of 10 records (~25 KiB of records per 10 batches): several
	// segments, the producer's batches spread over them.
	const batches, per = 40, 10
	var seq int32
	var lastOffset int64
	for i := range batches {
		code, off := rawIdempotentProduce(t, ctx, cl, topic, topicID, 0, pid, epoch, seq, per)
		if code != 0 || off != int64(i*per) {
			t.Fatalf("batch %d: %v at offset %d, want offset %d", i, kerr.ErrorForCode(code), off, i*per)
		}
		seq += per
		lastOffset = off
	}
	end := int64(batches * per)

	for _, how := range []string{"clean stop", "kill -9"} {
		if how == "clean stop" {
			b.Stop(t)
			// A clean stop leaves a snapshot at the log end offset.
			snap := filepath.Join(b.Dir, topic+"-0", fmt.Sprintf("%020d.snapshot", end))
			if _, err := os.Stat(snap); err != nil {
				t.Errorf("after a clean stop: %v", err)
			}
		} else {
			b.Kill(t)
		}
		b.Restart(t)
		// Every segment was rolled with a snapshot, so no restart replays the
		// log from its start.
		for _, line := range strings.Split(b.LastRunOutput(), "\n") {
			if strings.Contains(line, "from the log start") && strings.Contains(line, topic+"-0") {
				t.Errorf("after %s: the state of %s was rebuilt from the log start: %s", how, topic, line)
			}
		}
		waitTopicReady(t, ctx, adm, topic, 1)
		// The last batch again: a duplicate, answered with its original offset.
		code, off := rawIdempotentProduce(t, ctx, cl, topic, topicID, 0, pid, epoch, seq-per, per)
		if code != 0 || off != lastOffset {
			t.Errorf("after %s: retried last batch got %v at offset %d, want success at the original offset %d", how, kerr.ErrorForCode(code), off, lastOffset)
		}
		// A gap in the sequence.
		if code, _ := rawIdempotentProduce(t, ctx, cl, topic, topicID, 0, pid, epoch, seq+5, per); code != kerr.OutOfOrderSequenceNumber.Code {
			t.Errorf("after %s: batch skipping 5 sequences got %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", how, kerr.ErrorForCode(code))
		}
		if hwm := listOffset(t, ctx, cl, topic, 0, readUncommittedLevel); hwm != end {
			t.Fatalf("after %s: high watermark %d, want %d (nothing appended twice)", how, hwm, end)
		}
		// The next batch in sequence is appended.
		code, off = rawIdempotentProduce(t, ctx, cl, topic, topicID, 0, pid, epoch, seq, per)
		if code != 0 || off != end {
			t.Fatalf("after %s: next batch got %v at offset %d, want offset %d", how, kerr.ErrorForCode(code), off, end)
		}
		seq += per
		lastOffset = off
		end += per
	}
}
