package faults

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// librdkafka's implicit acknowledgement (docs/DURABILITY.md, finding 17).
//
// An idempotent librdkafka producer (v1.0 to at least v2.15.0) keeps up to
// five ProduceRequests in flight per partition. When a batch succeeds while
// an earlier message of the partition is still unacknowledged
// (rd_kafka_handle_idempotent_Produce_success in rdkafka_request.c, the
// acked_msgid check), it reports every queued message up to the
// succeeding batch as delivered — status PERSISTED, offset -1001 — without
// sending it again (rd_kafka_dr_implicit_ack in rdkafka_broker.c). Its
// reasoning: the broker enforces sequence order, so the later batch could
// only have been appended if the earlier one was. That holds while the
// broker has state for the producer; for a producer it has no state for
// (its first batch to a partition, or after the state expired) Kafka has
// accepted any sequence since 2.5 (KIP-360), and so does samsa. So when
// the first batch is refused with nothing appended (NOT_ENOUGH_REPLICAS,
// NOT_LEADER_OR_FOLLOWER, ...) and the second, already in flight, is
// accepted, librdkafka reports the first batch delivered at -1001 and it
// is in no log. TestLibrdkafkaImplicitAckLoss (package compattests)
// reproduces it against samsa and Kafka 4.4.
//
// RdkEvidence reads a producer's own debug log (debug "eos,msg") so that
// the checker can name such a loss only when the log shows the whole
// chain for that very message.

// RdkEvidence holds what one librdkafka producer's debug log says about
// its batches, in log order.
type RdkEvidence struct {
	// Topic is the topic the producer writes (Acks name only partitions).
	Topic  string
	events []rdkEvent
}

type rdkEventKind int

const (
	// rdkRefused: a batch came back with an error the broker gives only
	// when it appended nothing, and librdkafka keeps the messages to send
	// again (actions Retry or Refresh, MsgNotPersisted).
	rdkRefused rdkEventKind = iota
	// rdkOtherOutcome: any other outcome of a batch (delivered, or an error
	// that leaves the outcome unknown).
	rdkOtherOutcome
	// rdkImplicitAck: messages reported delivered by a later batch's
	// success.
	rdkImplicitAck
)

// rdkEvent is one line of interest: the batch or the implicitly acked run
// of msgids first..last of topic/partition.
type rdkEvent struct {
	kind        rdkEventKind
	topic       string
	partition   int32
	first, last uint64
	err         string
}

// rdkNotAppended are librdkafka's texts of the broker errors that mean
// nothing of the batch was appended. A timeout, a transport error or a
// storage error leave the outcome unknown and are not here.
var rdkNotAppended = map[string]bool{
	"Broker: Not enough in-sync replicas": true, // NOT_ENOUGH_REPLICAS
	"Broker: Not leader for partition":    true, // NOT_LEADER_OR_FOLLOWER
	"Broker: Unknown topic or partition":  true, // UNKNOWN_TOPIC_OR_PARTITION
	"Broker: Leader not available":        true, // LEADER_NOT_AVAILABLE
}

var (
	// rdkBatchLine matches rd_kafka_msgbatch_handle_Produce_result's and
	// rd_kafka_handle_Produce_error's MSGSET lines.
	rdkBatchLine = regexp.MustCompile(`(\S+) \[(\d+)\]: MessageSet with (\d+) message\(s\) \(MsgId (\d+), BaseSeq -?\d+\) (delivered|encountered error: (.*) \(actions ([^)]*)\))`)
	// rdkImplicitLine matches rd_kafka_dr_implicit_ack's IMPLICITACK line.
	rdkImplicitLine = regexp.MustCompile(`(\S+) \[(\d+)\] \d+ message\(s\) implicitly acked by subsequent batch success \(msgids (\d+)\.\.(\d+), last acked \d+\)`)
)

// AddLine records what one log line says; other lines are ignored.
func (e *RdkEvidence) AddLine(line string) {
	if m := rdkImplicitLine.FindStringSubmatch(line); m != nil {
		part, err1 := strconv.ParseInt(m[2], 10, 32)
		first, err2 := strconv.ParseUint(m[3], 10, 64)
		last, err3 := strconv.ParseUint(m[4], 10, 64)
		if err1 == nil && err2 == nil && err3 == nil && first <= last {
			e.events = append(e.events, rdkEvent{kind: rdkImplicitAck, topic: m[1], partition: int32(part), first: first, last: last})
		}
		return
	}
	m := rdkBatchLine.FindStringSubmatch(line)
	if m == nil {
		return
	}
	part, err1 := strconv.ParseInt(m[2], 10, 32)
	n, err2 := strconv.ParseUint(m[3], 10, 64)
	first, err3 := strconv.ParseUint(m[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || n == 0 {
		return
	}
	ev := rdkEvent{kind: rdkOtherOutcome, topic: m[1], partition: int32(part), first: first, last: first + n - 1, err: m[6]}
	if m[5] != "delivered" && rdkNotAppended[m[6]] && rdkRetried(m[7]) {
		ev.kind = rdkRefused
	}
	e.events = append(e.events, ev)
}

// rdkRetried reports whether librdkafka's actions (rd_kafka_actions2str,
// comma-separated) keep the messages to send again as not persisted.
func rdkRetried(actions string) bool {
	var retry, notPersisted, persisted bool
	for _, a := range strings.Split(actions, ",") {
		switch a {
		case "Retry", "Refresh":
			retry = true
		case "MsgNotPersisted":
			notPersisted = true
		case "MsgPossiblyPersisted", "MsgPersisted", "Permanent":
			persisted = true
		}
	}
	return retry && notPersisted && !persisted
}

// ProvesImplicitAck reports whether the log proves that message msgid of
// topic/partition (librdkafka numbers a partition's messages 1, 2, ... in
// the order they are produced to it) was reported delivered by an implicit
// acknowledgement while the last outcome the log gives for it was a
// refusal with nothing appended; if so it describes the two lines.
func (e *RdkEvidence) ProvesImplicitAck(topic string, partition int32, msgid uint64) (string, bool) {
	if e == nil || msgid == 0 {
		return "", false
	}
	var last *rdkEvent
	for i := range e.events {
		ev := &e.events[i]
		if ev.topic != topic || ev.partition != partition || msgid < ev.first || msgid > ev.last {
			continue
		}
		if ev.kind != rdkImplicitAck {
			last = ev
			continue
		}
		// The message's delivery report: librdkafka gives one per message.
		if last == nil || last.kind != rdkRefused {
			return "", false
		}
		return fmt.Sprintf("msgid %d: batch of msgids %d..%d refused (%s), then implicitly acked (msgids %d..%d)",
			msgid, last.first, last.last, last.err, ev.first, ev.last), true
	}
	return "", false
}
