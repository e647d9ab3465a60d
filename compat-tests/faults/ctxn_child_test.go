package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// ctxnChild is a child's parsed ctxnEnv.
type ctxnChild struct {
	role, addrs, topic  string
	partitions, id, run int
	size, abortEvery    int
	interval            time.Duration
	say                 func(format string, args ...any)
	stop                chan struct{} // closed on SIGTERM
	maxReportErrs       int64
	reportedErrs        atomic.Int64 // from the main and the events goroutines
}

// TestConfluentTxnChild is the child process of StartConfluentTxn: a
// confluent-kafka-go transactional producer (transactions of size
// records "t<seq>-<i>", every abort-every-th aborted, until SIGTERM ends
// it between two transactions) or a read_committed consumer of every
// partition from offset 0 (until SIGTERM). It reports on stdout (see
// ctxnPrefix) and does nothing in a normal run.
func TestConfluentTxnChild(t *testing.T) {
	spec := os.Getenv(ctxnEnv)
	if spec == "" {
		t.Skip("runs only as a child process of StartConfluentTxn")
	}
	f := strings.Split(spec, ";")
	if len(f) != 9 {
		t.Fatalf("%s: %q", ctxnEnv, spec)
	}
	c := &ctxnChild{role: f[0], addrs: f[1], topic: f[2], maxReportErrs: 50}
	var errs []error
	for i, dst := range []*int{&c.partitions, &c.id, &c.run, &c.size, &c.abortEvery} {
		n, err := strconv.Atoi(f[3+i])
		errs = append(errs, err)
		*dst = n
	}
	d, err := time.ParseDuration(f[8])
	c.interval = d
	if errors.Join(append(errs, err)...) != nil || c.partitions < 1 || c.size < 1 {
		t.Fatalf("%s: %q", ctxnEnv, spec)
	}
	var mu sync.Mutex
	c.say = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, ctxnPrefix+format+"\n", args...)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	c.stop = make(chan struct{})
	go func() {
		<-term
		close(c.stop)
	}()
	switch c.role {
	case "producer":
		c.produce()
	case "consumer":
		c.consume(t)
	default:
		t.Fatalf("%s: role %q", ctxnEnv, c.role)
	}
}

// reportErr reports a client error outside a transaction, the first
// maxReportErrs of them.
func (c *ctxnChild) reportErr(format string, args ...any) {
	if c.reportedErrs.Add(1) <= c.maxReportErrs {
		c.say("E "+format, args...)
	}
}

func (c *ctxnChild) terminated() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// newProducer makes a transactional producer and runs InitTransactions
// until it succeeds (a new producer after a fatal error), for at most 3
// minutes or until SIGTERM: nil then.
func (c *ctxnChild) newProducer() *kafka.Producer {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		p, err := kafka.NewProducer(&kafka.ConfigMap{
			"bootstrap.servers":      c.addrs,
			"client.id":              fmt.Sprintf("confluent-txn-%d-%d", c.id, c.run),
			"transactional.id":       ctxnTxnID(c.topic, c.id),
			"transaction.timeout.ms": 30000,
			"message.timeout.ms":     25000,
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
					c.reportErr("event: %s", strings.ReplaceAll(e.Error(), "\n", " "))
				}
			}
		}()
		for time.Now().Before(deadline) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := p.InitTransactions(ctx)
			cancel()
			if err == nil {
				return p
			}
			c.reportErr("InitTransactions: %v", err)
			if c.terminated() {
				p.Close()
				return nil
			}
			var ke kafka.Error
			if errors.As(err, &ke) && ke.IsFatal() {
				break
			}
			select { // a retry pace
			case <-c.stop:
				p.Close()
				return nil
			case <-time.After(500 * time.Millisecond):
			}
		}
		p.Close()
	}
	return nil
}

// ctxnAbort aborts the transaction under way, retrying retriable errors
// for at most a minute.
func ctxnAbort(p *kafka.Producer) error {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := p.AbortTransaction(ctx)
		cancel()
		if err == nil {
			return nil
		}
		var ke kafka.Error
		if !errors.As(err, &ke) || !ke.IsRetriable() || time.Now().After(deadline) {
			return err
		}
	}
}

// ctxnCommit commits the transaction under way, retrying retriable errors
// for at most 90 s and aborting after an abortable one. It returns the
// outcome and why it is not a commit; replace is true when the producer
// must be replaced (the outcome is then unknown).
func ctxnCommit(p *kafka.Producer) (outcome TxnOutcome, why string, replace bool) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := p.CommitTransaction(ctx)
		cancel()
		if err == nil {
			return TxnCommitted, "", false
		}
		why := "commit: " + strings.ReplaceAll(err.Error(), "\n", " ")
		var ke kafka.Error
		if errors.As(err, &ke) {
			if ke.TxnRequiresAbort() {
				if aerr := ctxnAbort(p); aerr != nil {
					return TxnUnknown, why + "; abort: " + aerr.Error(), true
				}
				return TxnAborted, why, false
			}
			if ke.IsRetriable() && !ke.IsFatal() && time.Now().Before(deadline) {
				continue
			}
		}
		return TxnUnknown, why, true
	}
}

func (c *ctxnChild) produce() {
	p := c.newProducer()
	if p == nil {
		return
	}
	defer func() {
		if p != nil {
			p.Close()
		}
	}()
	tick := time.NewTicker(max(c.interval, time.Millisecond))
	defer tick.Stop()
	base := (c.id*ctxnRuns + c.run) * ctxnSeqBase
	for k := 0; k < ctxnSeqBase; k++ {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		seq := base + k
		if err := p.BeginTransaction(); err != nil {
			c.reportErr("BeginTransaction: %v", err)
			p.Close()
			if p = c.newProducer(); p == nil {
				return
			}
			continue
		}
		c.say("S %d", seq)
		var produceErr error
		for i := range c.size {
			err := p.Produce(&kafka.Message{
				TopicPartition: kafka.TopicPartition{Topic: &c.topic, Partition: int32(i % c.partitions)},
				Value:          fmt.Appendf(nil, "t%d-%d", seq, i),
			}, nil)
			if err != nil {
				produceErr = err
				break
			}
		}
		if produceErr != nil || (c.abortEvery > 0 && k%c.abortEvery == c.abortEvery-1) {
			why := "asked"
			if produceErr != nil {
				why = "produce: " + produceErr.Error()
			}
			if err := ctxnAbort(p); err != nil {
				c.say("U %d abort (%s): %s", seq, why, strings.ReplaceAll(err.Error(), "\n", " "))
				p.Close()
				if p = c.newProducer(); p == nil {
					return
				}
				continue
			}
			c.say("A %d %s", seq, why)
			continue
		}
		outcome, why, replace := ctxnCommit(p)
		switch outcome {
		case TxnCommitted:
			c.say("C %d", seq)
		case TxnAborted:
			c.say("A %d %s", seq, why)
		default:
			c.say("U %d %s", seq, why)
		}
		if replace {
			p.Close()
			if p = c.newProducer(); p == nil {
				return
			}
		}
	}
}

func (c *ctxnChild) consume(t *testing.T) {
	cons, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers":  c.addrs,
		"group.id":           fmt.Sprintf("faults-ctxn-reader-%d", os.Getpid()),
		"enable.auto.commit": false,
		"isolation.level":    "read_committed",
		"auto.offset.reset":  "earliest",
		"log_level":          0,
	})
	if err != nil {
		c.reportErr("NewConsumer: %v", err)
		t.Fatalf("kafka.NewConsumer: %v", err)
	}
	defer cons.Close()
	// Explicit offsets: no offset lookup that librdkafka could repeat
	// (compat-tests/FINDINGS.md, "Client behaviour").
	var tps []kafka.TopicPartition
	for p := range c.partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &c.topic, Partition: int32(p), Offset: 0})
	}
	if err := cons.Assign(tps); err != nil {
		c.reportErr("Assign: %v", err)
		t.Fatalf("Assign: %v", err)
	}
	for !c.terminated() {
		switch e := cons.Poll(200).(type) {
		case *kafka.Message:
			if e.TopicPartition.Error != nil {
				c.reportErr("fetch: %v", e.TopicPartition.Error)
				continue
			}
			c.say("V %s", e.Value)
		case kafka.Error:
			c.reportErr("consumer: %s", strings.ReplaceAll(e.Error(), "\n", " "))
		}
	}
}
