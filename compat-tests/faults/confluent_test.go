package faults

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestConfluentProducerChild is the child process of
// StartConfluentProducers: an idempotent acks=all confluent-kafka-go
// producer that sends "p<id>-<seq>" round-robin over the partitions every
// interval until SIGTERM, then flushes (at most 90 s) and reports every
// delivery on stdout. It does nothing in a normal run.
func TestConfluentProducerChild(t *testing.T) {
	spec := os.Getenv(confluentEnv)
	if spec == "" {
		t.Skip("runs only as a child process of StartConfluentProducers")
	}
	f := strings.Split(spec, ";")
	if len(f) != 5 {
		t.Fatalf("%s: %q", confluentEnv, spec)
	}
	addrs, topic := f[0], f[1]
	partitions, err1 := strconv.Atoi(f[2])
	id, err2 := strconv.Atoi(f[3])
	interval, err3 := time.ParseDuration(f[4])
	if err1 != nil || err2 != nil || err3 != nil || partitions < 1 {
		t.Fatalf("%s: %q", confluentEnv, spec)
	}
	cfg := kafka.ConfigMap{
		"bootstrap.servers":  addrs,
		"client.id":          fmt.Sprintf("confluent-producer-%d", id),
		"enable.idempotence": true,
		"acks":               "all",
		"linger.ms":          2,
		"message.timeout.ms": 120000,
		"log_level":          0,
	}
	if os.Getenv(confluentLogEnv) == "1" {
		// librdkafka logs to stderr, which the parent keeps.
		cfg["log_level"], cfg["debug"] = 7, "eos,msg"
	}
	p, err := kafka.NewProducer(&cfg)
	if err != nil {
		t.Fatalf("kafka.NewProducer: %v", err)
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, confluentPrefix+format+"\n", args...)
	}
	reports := make(chan struct{})
	go func() {
		defer close(reports)
		for ev := range p.Events() {
			m, ok := ev.(*kafka.Message)
			if !ok {
				continue
			}
			o, _ := m.Opaque.(confluentOpaque)
			if err := m.TopicPartition.Error; err != nil {
				say("F %d %s", o.seq, strings.ReplaceAll(err.Error(), "\n", " "))
				continue
			}
			say("A %d %d %d %d", o.seq, m.TopicPartition.Partition, int64(m.TopicPartition.Offset), o.msgID)
		}
	}()
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	queued := make([]uint64, partitions)
	for seq := int64(0); ; {
		select {
		case <-term:
			if p.Flush(90_000) > 0 {
				// Fail what is left (outcome unknown) and serve
				// those reports before Close closes Events.
				_ = p.Purge(kafka.PurgeQueue | kafka.PurgeInFlight)
				p.Flush(10_000)
			}
			p.Close()
			<-reports
			return
		case <-tick.C:
		}
		if p.Len() >= maxBuffered {
			// The cluster takes nothing now: skip a tick.
			continue
		}
		part := int32(seq % int64(partitions))
		// librdkafka numbers a partition's messages 1, 2, ... as they
		// are queued (its msgid, which its debug log names): a refused
		// Produce call takes no number.
		o := confluentOpaque{seq: seq, msgID: queued[part] + 1}
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part},
			Value:          fmt.Appendf(nil, "p%d-%d", id, seq),
			Opaque:         o,
		}
		if err := p.Produce(msg, nil); err != nil {
			say("F %d %s", seq, err)
		} else {
			queued[part]++
		}
		seq++
	}
}

// confluentOpaque is a child's message opaque: its sequence number and
// librdkafka's msgid for it.
type confluentOpaque struct {
	seq   int64
	msgID uint64
}
