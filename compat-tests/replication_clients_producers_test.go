package compattests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	confluent "github.com/confluentinc/confluent-kafka-go/v2/kafka"
	kafkago "github.com/segmentio/kafka-go"

	"github.com/samsa-broker/samsa/compat-tests/childproc"
)

// The syncProducers of replication_clients_test.go, one per client. Each is set up
// as its users would for acks=all across leader failures, with request timeouts of a
// few seconds so that a paused leader costs seconds, not the default 30.

type saramaFaultProducer struct {
	p     sarama.SyncProducer
	topic string
}

func openSaramaFaultProducer(t *testing.T, addrs []string, topic string) syncProducer {
	cfg := saramaConfig()
	cfg.Producer.Partitioner = sarama.NewHashPartitioner
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1 // sarama's requirement for idempotence
	cfg.Producer.Retry.Max = 120
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	cfg.Net.DialTimeout, cfg.Net.ReadTimeout, cfg.Net.WriteTimeout = 5*time.Second, 5*time.Second, 5*time.Second
	cfg.Producer.Timeout = 5 * time.Second
	cfg.Metadata.Retry.Max = 60
	p, err := sarama.NewSyncProducer(addrs, cfg)
	if err != nil {
		t.Fatalf("sarama.NewSyncProducer: %v", err)
	}
	return &saramaFaultProducer{p: p, topic: topic}
}

func (s *saramaFaultProducer) send(_ context.Context, key, value string) (int32, int64, error) {
	return s.p.SendMessage(&sarama.ProducerMessage{Topic: s.topic, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(value)})
}

func (s *saramaFaultProducer) close() { _ = s.p.Close() }

type kafkaGoFaultProducer struct {
	w  *kafkago.Writer
	mu sync.Mutex
	// last is what Completion reported for the one message in flight.
	lastPartition int32
	lastOffset    int64
}

func openKafkaGoFaultProducer(t *testing.T, addrs []string, topic string) syncProducer {
	k := &kafkaGoFaultProducer{}
	k.w = &kafkago.Writer{
		Addr: kafkago.TCP(addrs...), Topic: topic, Balancer: &kafkago.Hash{},
		RequiredAcks: kafkago.RequireAll, BatchSize: 1, MaxAttempts: 1,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second,
		Transport: &kafkago.Transport{MetadataTTL: time.Second, DialTimeout: 5 * time.Second},
		Completion: func(msgs []kafkago.Message, err error) {
			if err != nil || len(msgs) != 1 {
				return
			}
			k.mu.Lock()
			k.lastPartition, k.lastOffset = int32(msgs[0].Partition), msgs[0].Offset
			k.mu.Unlock()
		},
	}
	return k
}

func (k *kafkaGoFaultProducer) send(ctx context.Context, key, value string) (int32, int64, error) {
	k.mu.Lock()
	k.lastPartition, k.lastOffset = -1, -1
	k.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	if err := k.w.WriteMessages(wctx, kafkago.Message{Key: []byte(key), Value: []byte(value)}); err != nil {
		return 0, 0, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastPartition, k.lastOffset, nil
}

func (k *kafkaGoFaultProducer) close() { _ = k.w.Close() }

type confluentFaultProducer struct {
	p     *confluent.Producer
	topic string
}

func openConfluentFaultProducer(t *testing.T, addrs []string, topic string) syncProducer {
	p, err := confluent.NewProducer(&confluent.ConfigMap{
		"bootstrap.servers": strings.Join(addrs, ","), "enable.idempotence": true, "acks": "all",
		"linger.ms": 0, "request.timeout.ms": 5000, "socket.timeout.ms": 5000, "message.timeout.ms": 120000,
		"topic.metadata.refresh.interval.ms": 1000,
	})
	if err != nil {
		t.Fatalf("confluent NewProducer: %v", err)
	}
	go func() {
		for range p.Events() { // errors and logs not tied to a message
		}
	}()
	return &confluentFaultProducer{p: p, topic: topic}
}

func (c *confluentFaultProducer) send(ctx context.Context, key, value string) (int32, int64, error) {
	done := make(chan confluent.Event, 1)
	msg := &confluent.Message{TopicPartition: confluent.TopicPartition{Topic: &c.topic, Partition: confluent.PartitionAny},
		Key: []byte(key), Value: []byte(value)}
	if err := c.p.Produce(msg, done); err != nil {
		return 0, 0, err
	}
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case ev := <-done:
		m, ok := ev.(*confluent.Message)
		if !ok {
			return 0, 0, fmt.Errorf("confluent: delivery event %v", ev)
		}
		if m.TopicPartition.Error != nil {
			return 0, 0, m.TopicPartition.Error
		}
		return m.TopicPartition.Partition, int64(m.TopicPartition.Offset), nil
	}
}

func (c *confluentFaultProducer) close() {
	c.p.Flush(10000)
	c.p.Close()
}

// javaFaultProducer drives samsa.compat.FaultProducer: one "SEND key value" line in,
// one "ACK partition offset" or "FAIL message" line out.
type javaFaultProducer struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	done  chan struct{}
	stdrr *logWriter
}

func openJavaFaultProducer(t *testing.T, cp string, addrs []string, topic string) syncProducer {
	cmd := exec.Command("java", "-cp", cp, "samsa.compat.FaultProducer", strings.Join(addrs, ","), topic)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr := &logWriter{t: t, prefix: "java stderr: "}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := childproc.Start(cmd); err != nil {
		t.Fatalf("starting java: %v", err)
	}
	j := &javaFaultProducer{cmd: cmd, in: in, out: bufio.NewScanner(out), done: make(chan struct{}), stdrr: stderr}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-j.done
	})
	go func() { defer close(j.done); _ = cmd.Wait() }()
	return j
}

var errJavaExited = errors.New("java FaultProducer exited")

func (j *javaFaultProducer) send(_ context.Context, key, value string) (int32, int64, error) {
	if _, err := fmt.Fprintf(j.in, "SEND %s %s\n", key, value); err != nil {
		return 0, 0, fmt.Errorf("%w: %w", errJavaExited, err)
	}
	for j.out.Scan() {
		f := strings.Fields(j.out.Text())
		switch {
		case len(f) == 3 && f[0] == "ACK":
			p, _ := strconv.Atoi(f[1])
			off, _ := strconv.ParseInt(f[2], 10, 64)
			return int32(p), off, nil
		case len(f) > 0 && f[0] == "FAIL":
			return 0, 0, errors.New(strings.Join(f[1:], " "))
		}
		// other lines: the client's own output
	}
	return 0, 0, errJavaExited
}

func (j *javaFaultProducer) close() {
	fmt.Fprintln(j.in, "CLOSE")
	j.in.Close()
	select {
	case <-j.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-j.cmd.Process.Pid, syscall.SIGKILL)
		<-j.done
	}
	j.stdrr.flush()
}
