package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// ctpChild is a confluent consume-transform-produce child's parameters
// and state.
type ctpChild struct {
	addrs, input, output, group, txnID, clientID string
	stop                                         chan struct{} // closed on SIGTERM
	say                                          func(format string, args ...any)
	mu                                           sync.Mutex
	reported                                     int
}

// ctpMaxReportedErrs bounds the "CTP E" lines of one process.
const ctpMaxReportedErrs = 100

// ctpBatchMax and ctpBatchWait bound one transaction's input: the
// records of the polls until none came for ctpBatchWait or ctpBatchMax
// are in hand.
const (
	ctpBatchMax  = 200
	ctpBatchWait = 50 * time.Millisecond
)

// TestConfluentCTPChild is the child process of a confluent
// consume-transform-produce member (eos_child.go): sessions of a
// read_committed consumer in the workload's group and a transactional
// producer, one transaction per batch of polled records, until SIGTERM
// ends it after the transaction under way. It reports on stdout (see
// ctpPrefix) and does nothing in a normal run.
func TestConfluentCTPChild(t *testing.T) {
	spec := os.Getenv(ctpEnv)
	if spec == "" {
		t.Skip("runs only as a child process of EOSWorkload")
	}
	f := strings.Split(spec, ";")
	if len(f) != 6 {
		t.Fatalf("%s: %q", ctpEnv, spec)
	}
	c := &ctpChild{addrs: f[0], input: f[1], output: f[2], group: f[3], txnID: f[4], clientID: f[5],
		stop: make(chan struct{})}
	var out sync.Mutex
	c.say = func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		fmt.Fprintf(os.Stdout, ctpPrefix+format+"\n", args...)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		close(c.stop)
	}()
	backoff := 250 * time.Millisecond
	for !c.terminated() {
		if c.session() {
			backoff = 250 * time.Millisecond
		}
		select {
		case <-c.stop:
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

func (c *ctpChild) terminated() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// reportErr reports a client error, the first ctpMaxReportedErrs.
func (c *ctpChild) reportErr(format string, args ...any) {
	c.mu.Lock()
	c.reported++
	n := c.reported
	c.mu.Unlock()
	if n <= ctpMaxReportedErrs {
		c.say("E "+format, args...)
	}
}

// newProducer makes the transactional producer and runs InitTransactions
// (fencing the previous process or session of the transactional.id and
// aborting what it left open) until it succeeds, for at most 2 minutes
// or until SIGTERM: nil then.
func (c *ctpChild) newProducer() *kafka.Producer {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) && !c.terminated() {
		p, err := kafka.NewProducer(&kafka.ConfigMap{
			"bootstrap.servers":      c.addrs,
			"client.id":              c.clientID,
			"transactional.id":       c.txnID,
			"transaction.timeout.ms": 20000,
			"message.timeout.ms":     15000,
			"linger.ms":              2,
			"go.delivery.reports":    false,
			"log_level":              0,
		})
		if err != nil {
			c.reportErr("NewProducer: %v", err)
			return nil
		}
		go func() {
			for ev := range p.Events() {
				if e, ok := ev.(kafka.Error); ok {
					c.reportErr("producer event: %s", strings.ReplaceAll(e.Error(), "\n", " "))
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = p.InitTransactions(ctx)
		cancel()
		if err == nil {
			return p
		}
		c.reportErr("InitTransactions: %v", err)
		p.Close()
		select { // a retry pace
		case <-c.stop:
		case <-time.After(500 * time.Millisecond):
		}
	}
	return nil
}

// session opens a consumer and a producer and transforms until a
// transaction fails or SIGTERM; it reports whether it committed anything.
func (c *ctpChild) session() (committed bool) {
	cons, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":             c.addrs,
		"client.id":                     c.clientID,
		"group.id":                      c.group,
		"isolation.level":               "read_committed",
		"enable.auto.commit":            false,
		"auto.offset.reset":             "earliest",
		"partition.assignment.strategy": "range",
		"session.timeout.ms":            10000,
		"heartbeat.interval.ms":         1000,
		"fetch.wait.max.ms":             500,
		"log_level":                     0,
	})
	if err != nil {
		c.reportErr("NewConsumer: %v", err)
		return false
	}
	defer cons.Close() // leaves the group
	// A rebalance runs inside Poll, between two records of a batch: the
	// batch then may hold records of partitions no longer this member's,
	// whose offsets it must not commit. It is dropped.
	rebalanced := false
	if err := cons.SubscribeTopics([]string{c.input}, func(*kafka.Consumer, kafka.Event) error {
		rebalanced = true
		return nil
	}); err != nil {
		c.reportErr("Subscribe: %v", err)
		return false
	}
	p := c.newProducer()
	if p == nil {
		return false
	}
	defer p.Close()
	c.say("S")
	for !c.terminated() {
		batch, ok := c.poll(cons, &rebalanced)
		if !ok {
			return committed
		}
		if len(batch) == 0 {
			continue
		}
		if !c.transform(cons, p, batch) {
			return committed
		}
		committed = true
	}
	return committed
}

// poll returns the records of polls until none came for ctpBatchWait
// (after a first one) or ctpBatchMax are in hand; ok is false after a
// fatal consumer error.
func (c *ctpChild) poll(cons *kafka.Consumer, rebalanced *bool) (batch []*kafka.Message, ok bool) {
	timeout := 200
	for len(batch) < ctpBatchMax && !c.terminated() {
		ev := cons.Poll(timeout)
		if *rebalanced {
			*rebalanced, batch = false, nil
		}
		switch e := ev.(type) {
		case *kafka.Message:
			if e.TopicPartition.Error != nil {
				c.reportErr("fetch: %v", e.TopicPartition.Error)
				continue
			}
			batch = append(batch, e)
			timeout = int(ctpBatchWait.Milliseconds())
		case kafka.Error:
			c.reportErr("consumer: %s", strings.ReplaceAll(e.Error(), "\n", " "))
			if e.IsFatal() {
				return nil, false
			}
		case nil:
			if len(batch) > 0 {
				return batch, true
			}
		}
	}
	return batch, true
}

// transform writes batch transformed and commits its offsets in one
// transaction; false when the session must be replaced (anything but a
// commit: after an abort the consumer's position is past records whose
// outputs were discarded, and a new consumer starts from the group's
// committed offsets).
func (c *ctpChild) transform(cons *kafka.Consumer, p *kafka.Producer, batch []*kafka.Message) bool {
	if err := p.BeginTransaction(); err != nil {
		c.reportErr("BeginTransaction: %v", err)
		return false
	}
	n := len(batch)
	c.say("B %d", n)
	next := make(map[int32]kafka.TopicPartition)
	var failed error
	for _, m := range batch {
		tp := m.TopicPartition
		if o, ok := next[tp.Partition]; !ok || o.Offset <= tp.Offset {
			next[tp.Partition] = kafka.TopicPartition{Topic: tp.Topic, Partition: tp.Partition, Offset: tp.Offset + 1}
		}
		if failed != nil {
			continue
		}
		failed = p.Produce(&kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &c.output, Partition: kafka.PartitionAny},
			Key:            m.Key,
			Value:          []byte(eosOutput(string(m.Value))),
		}, nil)
	}
	if failed == nil {
		offsets := make([]kafka.TopicPartition, 0, len(next))
		for _, tp := range next {
			offsets = append(offsets, tp)
		}
		meta, err := cons.GetConsumerGroupMetadata()
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = p.SendOffsetsToTransaction(ctx, offsets, meta)
			cancel()
		}
		failed = err
	}
	if failed != nil {
		why := "produce or send offsets: " + strings.ReplaceAll(failed.Error(), "\n", " ")
		var ke kafka.Error
		if errors.As(failed, &ke) && ke.IsFatal() {
			c.say("U %d %s", n, why)
			return false
		}
		if err := ctxnAbort(p); err != nil {
			c.say("U %d %s; abort: %s", n, why, strings.ReplaceAll(err.Error(), "\n", " "))
			return false
		}
		c.say("A %d %s", n, why)
		return false
	}
	outcome, why, _ := ctxnCommit(p)
	switch outcome {
	case TxnCommitted:
		c.say("C %d", n)
		return true
	case TxnAborted:
		c.say("A %d %s", n, why)
	default:
		c.say("U %d %s", n, why)
	}
	return false
}
