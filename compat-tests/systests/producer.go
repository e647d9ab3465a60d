package systests

import (
	"fmt"
	"strconv"
	"testing"
)

// ProducerOptions configures a VerifiableProducer, as verifiable_producer.py
// does.
type ProducerOptions struct {
	Topic string
	// MaxMessages stops the producer after that many sends (0: until stopped).
	MaxMessages int
	// Throughput caps the messages per second (0: 1000, end_to_end.py's).
	Throughput int
	// Acks is the acks setting ("" means -1, the tool's default).
	Acks string
	// Idempotent sets enable.idempotence=true with
	// max.in.flight.requests.per.connection=5 and retries=1000000, as the
	// Python service does; otherwise enable.idempotence=false.
	Idempotent bool
	// Compression is compression.type ("" leaves the default, none).
	Compression string
	// RequestTimeoutMS is request.timeout.ms (0: 30000, the service's).
	RequestTimeoutMS int
	// RepeatingKeys gives records keys 0..n-1 in turn (--repeating-keys),
	// spreading them over partitions.
	RepeatingKeys int
	// Extra are more producer properties (key=value).
	Extra []string
}

// Producer is a running VerifiableProducer and what it reported.
type Producer struct {
	proc
	acked        []int64
	ackedByPart  map[TopicPartition][]int64
	lastAcked    map[TopicPartition]int64
	notAcked     []int64
	badValues    []string
	shutdowns    int
	lastErrorMsg string
}

// StartProducer starts a VerifiableProducer on o.Topic.
func (tl *Tools) StartProducer(t testing.TB, name string, o ProducerOptions) *Producer {
	t.Helper()
	props := []string{fmt.Sprintf("request.timeout.ms=%d", cmpOr(o.RequestTimeoutMS, 30000))}
	if o.Compression != "" {
		props = append(props, "compression.type="+o.Compression)
	}
	if o.Idempotent {
		props = append(props, "max.in.flight.requests.per.connection=5", "retries=1000000", "enable.idempotence=true")
	} else {
		// The Python service leaves the client's default here, which is
		// idempotent since Kafka 3.0; the scenarios "without idempotence"
		// turn it off so that the non-idempotent path (retries that may
		// duplicate) is exercised too.
		props = append(props, "enable.idempotence=false")
	}
	props = append(props, o.Extra...)
	cfg := tl.writeProps(t, name+".properties", props)
	args := []string{"--topic", o.Topic, "--bootstrap-server", tl.bootstrap,
		"--throughput", strconv.Itoa(cmpOr(o.Throughput, 1000)), "--command-config", cfg}
	if o.MaxMessages > 0 {
		args = append(args, "--max-messages", strconv.Itoa(o.MaxMessages))
	}
	if o.Acks != "" {
		args = append(args, "--acks", o.Acks)
	}
	if o.RepeatingKeys > 0 {
		args = append(args, "--repeating-keys", strconv.Itoa(o.RepeatingKeys))
	}
	p := &Producer{ackedByPart: map[TopicPartition][]int64{}, lastAcked: map[TopicPartition]int64{}}
	p.proc = proc{name: name, tools: tl, class: "org.apache.kafka.tools.VerifiableProducer", args: args, handle: p.handle}
	p.start(t)
	return p
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// handle is verifiable_producer.py's _worker loop body.
// REQUIRES: p.mu held
func (p *Producer) handle(_ string, ev map[string]any) {
	switch str(ev, "name") {
	case "producer_send_success":
		v, err := strconv.ParseInt(str(ev, "value"), 10, 64)
		if err != nil {
			p.badValues = append(p.badValues, str(ev, "value"))
			return
		}
		tp := tpOf(ev)
		p.acked = append(p.acked, v)
		p.ackedByPart[tp] = append(p.ackedByPart[tp], v)
		p.lastAcked[tp] = num(ev, "offset")
	case "producer_send_error":
		v, _ := strconv.ParseInt(str(ev, "value"), 10, 64)
		p.notAcked = append(p.notAcked, v)
		p.lastErrorMsg = str(ev, "exception") + ": " + str(ev, "message")
	case "shutdown_complete":
		p.shutdowns++
	}
}

// NumAcked is the number of acknowledged sends.
func (p *Producer) NumAcked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// Acked returns the acknowledged values in the order of their acks.
func (p *Producer) Acked() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.acked...)
}

// NotAcked returns the values whose send failed, and the last failure.
func (p *Producer) NotAcked() ([]int64, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.notAcked...), p.lastErrorMsg
}

// LastAckedOffsets returns, by partition, the offset of the last
// acknowledged record.
func (p *Producer) LastAckedOffsets() map[TopicPartition]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[TopicPartition]int64, len(p.lastAcked))
	for k, v := range p.lastAcked {
		out[k] = v
	}
	return out
}

// BadValues returns acknowledged values that were not integers.
func (p *Producer) BadValues() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.badValues...)
}

// Stop ends the producer with SIGTERM (it flushes and prints
// shutdown_complete) and waits for it.
func (p *Producer) Stop(t testing.TB) { p.stop(t, true) }

// Wait waits for a producer with MaxMessages to finish by itself.
func (p *Producer) Wait(t testing.TB) { p.wait(t, ToolStopTimeout) }
