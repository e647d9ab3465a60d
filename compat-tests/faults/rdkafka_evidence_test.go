package faults

import (
	"strings"
	"testing"
)

// Lines in the shape librdkafka 2.11.1 writes them with debug "eos,msg"
// (rd_kafka_log_print: level|time|tag|name| message).
const (
	rdkRefusedNER   = `%7|1765021000.101|MSGSET|rdkafka#producer-1| [thrd:127.0.0.1:40001/1]: 127.0.0.1:40001/1: q [0]: MessageSet with 2 message(s) (MsgId 1, BaseSeq 0) encountered error: Broker: Not enough in-sync replicas (actions Retry,MsgNotPersisted)`
	rdkRefusedNotLd = `%7|1765021000.101|MSGSET|rdkafka#producer-1| [thrd:127.0.0.1:40001/1]: 127.0.0.1:40001/1: q [0]: MessageSet with 2 message(s) (MsgId 1, BaseSeq 0) encountered error: Broker: Not leader for partition (actions Refresh,MsgNotPersisted)`
	rdkTimedOut     = `%7|1765021000.101|MSGSET|rdkafka#producer-1| [thrd:127.0.0.1:40001/1]: 127.0.0.1:40001/1: q [0]: MessageSet with 2 message(s) (MsgId 1, BaseSeq 0) encountered error: Local: Timed out (actions Retry,MsgPossiblyPersisted)`
	rdkDelivered1   = `%7|1765021000.150|MSGSET|rdkafka#producer-1| [thrd:127.0.0.1:40001/1]: 127.0.0.1:40001/1: q [0]: MessageSet with 2 message(s) (MsgId 1, BaseSeq 0) delivered`
	rdkDelivered3   = `%7|1765021000.120|MSGSET|rdkafka#producer-1| [thrd:127.0.0.1:40001/1]: 127.0.0.1:40001/1: q [0]: MessageSet with 2 message(s) (MsgId 3, BaseSeq 2) delivered`
	rdkImplicit     = `%7|1765021000.120|IMPLICITACK|rdkafka#producer-1| [thrd:127.0.0.1:40001/1]: 127.0.0.1:40001/1: q [0] 2 message(s) implicitly acked by subsequent batch success (msgids 1..2, last acked 4)`
	rdkImplicitP1   = `%7|1765021000.120|IMPLICITACK|rdkafka#producer-1| [thrd:127.0.0.1:40001/1]: 127.0.0.1:40001/1: q [1] 2 message(s) implicitly acked by subsequent batch success (msgids 1..2, last acked 4)`
)

func evidenceOf(lines ...string) *RdkEvidence {
	e := &RdkEvidence{Topic: "q"}
	for _, l := range lines {
		e.AddLine(l)
	}
	return e
}

// TestRdkEvidenceRule checks both ways that the log proves finding 17's
// chain only with every link present, in order, for that very message.
func TestRdkEvidenceRule(t *testing.T) {
	for _, tc := range []struct {
		name      string
		lines     []string
		partition int32
		msgID     uint64
		want      bool
	}{
		{"refused NOT_ENOUGH_REPLICAS then implicitly acked", []string{rdkRefusedNER, rdkImplicit}, 0, 1, true},
		{"second message of the batch", []string{rdkRefusedNER, rdkImplicit}, 0, 2, true},
		{"refused NOT_LEADER_OR_FOLLOWER then implicitly acked", []string{rdkRefusedNotLd, rdkImplicit}, 0, 2, true},
		{"a later batch delivered between is no matter", []string{rdkRefusedNER, rdkDelivered3, rdkImplicit}, 0, 1, true},
		{"message outside the refused batch", []string{rdkRefusedNER, rdkImplicit}, 0, 3, false},
		{"unknown msgid", []string{rdkRefusedNER, rdkImplicit}, 0, 0, false},
		{"timed out: maybe appended, the implicit ack may be right", []string{rdkTimedOut, rdkImplicit}, 0, 1, false},
		{"refused, then sent again and delivered", []string{rdkRefusedNER, rdkDelivered1, rdkImplicit}, 0, 1, false},
		{"refused, no implicit ack", []string{rdkRefusedNER, rdkDelivered3}, 0, 1, false},
		{"implicit ack before the refusal", []string{rdkImplicit, rdkRefusedNER}, 0, 1, false},
		{"implicit ack of another partition", []string{rdkRefusedNER, rdkImplicitP1}, 0, 1, false},
		{"refusal of another partition", []string{rdkRefusedNER, rdkImplicitP1}, 1, 1, false},
		{"no log", nil, 0, 1, false},
		{"unrelated lines", []string{"%7|1765021000.1|PRODUCE|rdkafka#producer-1| [thrd:x]: q [0]: Produce MessageSet with 2 message(s) (120 bytes, ApiVersion 7, MsgVersion 2, MsgId 1, BaseSeq 0, PID{Id:1,Epoch:0}, uncompressed)"}, 0, 1, false},
	} {
		why, got := evidenceOf(tc.lines...).ProvesImplicitAck("q", tc.partition, tc.msgID)
		if got != tc.want {
			t.Errorf("%s: ProvesImplicitAck = %v (%q), want %v", tc.name, got, why, tc.want)
		}
		if got && !strings.Contains(why, "Not ") {
			t.Errorf("%s: description %q does not name the refusal", tc.name, why)
		}
	}
	if _, ok := evidenceOf(rdkRefusedNER, rdkImplicit).ProvesImplicitAck("other", 0, 1); ok {
		t.Errorf("ProvesImplicitAck of another topic = true")
	}
	var none *RdkEvidence
	if _, ok := none.ProvesImplicitAck("q", 0, 1); ok {
		t.Errorf("nil RdkEvidence proves something")
	}
}

// TestCheckClientImplicitAck checks the checker's use of the rule: a lost
// record is client-implicit-ack only when acknowledged without an offset,
// with its msgid, and proven by its own producer's log; otherwise it stays
// lost, an anomaly.
func TestCheckClientImplicitAck(t *testing.T) {
	final := map[int32][]Entry{0: {{Offset: 0, Value: "p100-8"}}}
	proof := map[int]*RdkEvidence{100: evidenceOf(rdkRefusedNER, rdkImplicit)}
	for _, tc := range []struct {
		name     string
		ack      Ack
		evidence map[int]*RdkEvidence
		wantLost int
	}{
		{"proven", Ack{Producer: 100, Seq: 0, Partition: 0, Offset: -1001, Value: "p100-0", MsgID: 1}, proof, 0},
		{"no log", Ack{Producer: 100, Seq: 0, Partition: 0, Offset: -1001, Value: "p100-0", MsgID: 1}, nil, 1},
		{"another producer's log", Ack{Producer: 101, Seq: 0, Partition: 0, Offset: -1001, Value: "p101-0", MsgID: 1}, proof, 1},
		{"acknowledged at an offset", Ack{Producer: 100, Seq: 0, Partition: 0, Offset: 5, Value: "p100-0", MsgID: 1}, proof, 1},
		{"msgid unknown", Ack{Producer: 100, Seq: 0, Partition: 0, Offset: -1001, Value: "p100-0"}, proof, 1},
		{"msgid not in the chain", Ack{Producer: 100, Seq: 12, Partition: 0, Offset: -1001, Value: "p100-12", MsgID: 4}, proof, 1},
	} {
		h := &History{Acks: []Ack{tc.ack, {Producer: 100, Seq: 8, Partition: 0, Offset: 0, Value: "p100-8", MsgID: 3}},
			Final: final, Librdkafka: tc.evidence}
		r := Check(h)
		if r.Lost.Count != tc.wantLost || r.ClientImplicitAck.Count != 1-tc.wantLost {
			t.Errorf("%s: lost %d, client-implicit-ack %d; want %d, %d\n%s", tc.name, r.Lost.Count, r.ClientImplicitAck.Count, tc.wantLost, 1-tc.wantLost, r)
		}
		if r.Anomalies() != tc.wantLost {
			t.Errorf("%s: Anomalies() = %d, want %d", tc.name, r.Anomalies(), tc.wantLost)
		}
		if tc.wantLost == 0 && !strings.Contains(r.String(), "client-implicit-ack: 1") {
			t.Errorf("%s: report does not print the class:\n%s", tc.name, r)
		}
	}
}
