// This file runs exactly-once consume-transform-produce with confluent-kafka-go
// (librdkafka): a group consumer at read_committed and a transactional producer
// (InitTransactions, BeginTransaction, SendOffsetsToTransaction with the consumer's
// group metadata, CommitTransaction). One batch is aborted and the consumer rewound to
// its committed offsets; later a batch is left open and a new producer with the same
// transactional id takes over: the old one's commit must fail as fenced. Every input
// record must appear in the read_committed output exactly once. Set SAMSA_TXN_DEBUG=1
// for librdkafka debug=eos,protocol,broker logs, printed when the test fails.

package compattests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kgo"
)

// confluentLogs collects the librdkafka logs of every client of a test into one buffer,
// printed if the test fails.
type confluentLogs struct {
	ch  chan kafka.LogEvent
	buf syncBuffer
}

func newConfluentLogs(t *testing.T) *confluentLogs {
	t.Helper()
	l := &confluentLogs{ch: make(chan kafka.LogEvent, 10000)}
	done := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case e := <-l.ch:
				fmt.Fprintf(&l.buf, "%s %s %s %s\n", e.Timestamp.Format("15:04:05.000"), e.Name, e.Tag, e.Message)
			case <-done:
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		<-drained
		if t.Failed() {
			out := l.buf.String()
			const keep = 256 << 10
			if len(out) > keep {
				out = "...\n" + out[len(out)-keep:]
			}
			t.Logf("librdkafka log:\n%s", out)
		}
	})
	return l
}

// config adds the logging settings to cfg.
func (l *confluentLogs) config(cfg kafka.ConfigMap) *kafka.ConfigMap {
	cfg["go.logs.channel.enable"] = true
	cfg["go.logs.channel"] = l.ch
	if os.Getenv("SAMSA_TXN_DEBUG") == "1" {
		cfg["debug"] = "eos,protocol,broker"
	}
	return &cfg
}

// TestTxnCTPConfluent is the confluent-kafka-go consume-transform-produce loop.
func TestTxnCTPConfluent(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	ctx := testContext(t, 150*time.Second)
	_, adm := newAdmin(t, b.Addr)
	const in, out, group, txnID, partitions, n = "txn-confluent-in", "txn-confluent-out", "txn-confluent-group", "txn-confluent-id", 3, 3000
	createTopicKadm(t, ctx, adm, in, partitions, nil)
	createTopicKadm(t, ctx, adm, out, partitions, nil)
	want := produceCTPInput(t, ctx, b.Addr, in, partitions, n)
	logs := newConfluentLogs(t)

	newProducer := func() *kafka.Producer {
		t.Helper()
		p, err := kafka.NewProducer(logs.config(kafka.ConfigMap{
			"bootstrap.servers":      b.Addr,
			"transactional.id":       txnID,
			"transaction.timeout.ms": 20000,
			"linger.ms":              5,
			"go.delivery.reports":    false,
		}))
		if err != nil {
			t.Fatalf("kafka.NewProducer: %v", err)
		}
		ictx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := p.InitTransactions(ictx); err != nil {
			p.Close()
			t.Fatalf("InitTransactions: %v", err)
		}
		return p
	}
	newConsumer := func() *kafka.Consumer {
		t.Helper()
		c, err := kafka.NewConsumer(logs.config(kafka.ConfigMap{
			"bootstrap.servers":        b.Addr,
			"group.id":                 group,
			"enable.auto.commit":       false,
			"enable.auto.offset.store": false,
			"isolation.level":          "read_committed",
			"auto.offset.reset":        "earliest",
			"session.timeout.ms":       10000,
		}))
		if err != nil {
			t.Fatalf("kafka.NewConsumer: %v", err)
		}
		if err := c.Subscribe(in, nil); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
		return c
	}
	prod, cons := newProducer(), newConsumer()
	defer func() {
		prod.Close()
		cons.Close()
	}()

	const abortBatch, abandonBatch, maxBatch = 3, 8, 100
	committed, batches, aborted := 0, 0, 0
	for committed < n {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d records committed at the deadline (%d batches, %d aborted)", committed, n, batches, aborted)
		}
		var msgs []*kafka.Message
		for len(msgs) < maxBatch {
			ev := cons.Poll(100)
			if ev == nil {
				break
			}
			switch e := ev.(type) {
			case *kafka.Message:
				if e.TopicPartition.Error != nil {
					t.Logf("consume: %v", e.TopicPartition.Error)
					continue
				}
				msgs = append(msgs, e)
			case kafka.Error:
				t.Logf("consumer error event: %v", e)
			}
		}
		if len(msgs) == 0 {
			continue
		}
		batches++
		if err := prod.BeginTransaction(); err != nil {
			t.Fatalf("BeginTransaction: %v", err)
		}
		for _, m := range msgs {
			err := prod.Produce(&kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &[]string{out}[0], Partition: m.TopicPartition.Partition},
				Key:            m.Key,
				Value:          append([]byte("out:"), m.Value...),
				Headers: []kafka.Header{{Key: srcHeader,
					Value: fmt.Appendf(nil, "%s/%d/%d", *m.TopicPartition.Topic, m.TopicPartition.Partition, m.TopicPartition.Offset)}},
			}, nil)
			if err != nil {
				t.Fatalf("Produce: %v", err)
			}
		}
		tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		switch batches {
		case abortBatch:
			if prod.Flush(10000) != 0 {
				t.Errorf("records still unflushed before the abort")
			}
			if err := prod.AbortTransaction(tctx); err != nil {
				t.Fatalf("AbortTransaction: %v", err)
			}
			aborted++
			rewindConfluent(t, cons)
		case abandonBatch:
			// The old producer flushes its records and goes quiet with the transaction
			// open; a new one with the same transactional id fences it.
			if prod.Flush(10000) != 0 {
				t.Errorf("records still unflushed before the takeover")
			}
			zombie := prod
			prod = newProducer()
			err := zombie.CommitTransaction(tctx)
			var kerr kafka.Error
			switch {
			case err == nil:
				t.Errorf("the fenced producer committed its transaction")
			case errors.As(err, &kerr) && (kerr.Code() == kafka.ErrFenced || kerr.Code() == kafka.ErrProducerFenced || kerr.Code() == kafka.ErrInvalidProducerEpoch):
				t.Logf("the fenced producer's commit failed as expected: %v (fatal %v)", err, kerr.IsFatal())
			default:
				t.Errorf("the fenced producer's commit failed with %v, want a fencing error", err)
			}
			zombie.Close()
			aborted++
			rewindConfluent(t, cons)
		default:
			assignment, err := cons.Assignment()
			if err != nil {
				t.Fatalf("Assignment: %v", err)
			}
			positions, err := cons.Position(assignment)
			if err != nil {
				t.Fatalf("Position: %v", err)
			}
			meta, err := cons.GetConsumerGroupMetadata()
			if err != nil {
				t.Fatalf("GetConsumerGroupMetadata: %v", err)
			}
			if err := prod.SendOffsetsToTransaction(tctx, positions, meta); err != nil {
				t.Fatalf("SendOffsetsToTransaction: %v", err)
			}
			if err := prod.CommitTransaction(tctx); err != nil {
				t.Fatalf("CommitTransaction: %v", err)
			}
			committed += len(msgs)
		}
		cancel()
	}
	t.Logf("%d records committed in %d batches, %d aborted", committed, batches, aborted)
	if committed != n {
		t.Errorf("committed %d records, want %d: the consumer read some twice after committed offsets", committed, n)
	}

	writeSentinels(t, ctx, b.Addr, out, partitions)
	checkExactlyOnce(t, want, readUntilSentinels(t, ctx, b.Addr, out, partitions, kgo.ReadCommitted()))
	// The group's offsets came from the transactions: they must be at the end.
	var progress ctpProgress
	waitGroupConsumed(t, ctx, adm, group, in, &progress)
}

// rewindConfluent seeks every assigned partition back to the group's committed offset
// (the beginning if none), as an application does after aborting a transaction.
func rewindConfluent(t *testing.T, c *kafka.Consumer) {
	t.Helper()
	assignment, err := c.Assignment()
	if err != nil {
		t.Fatalf("Assignment: %v", err)
	}
	committed, err := c.Committed(assignment, 10000)
	if err != nil {
		t.Fatalf("Committed: %v", err)
	}
	for _, tp := range committed {
		if tp.Offset < 0 {
			tp.Offset = kafka.OffsetBeginning
		}
		if err := c.Seek(tp, 0); err != nil {
			t.Fatalf("Seek(%v): %v", tp, err)
		}
	}
}
