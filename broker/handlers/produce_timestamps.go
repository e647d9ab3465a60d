package handlers

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/wire"
)

// timestampRange is the window of record timestamps a CreateTime topic
// accepts at now: [now - message.timestamp.before.max.ms, now +
// message.timestamp.after.max.ms], clamped to the int64 range (the
// before default is Long.MAX_VALUE, which disables the lower bound).
func timestampRange(tc config.TopicConfig, now int64) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if b := tc.MessageTimestampBeforeMaxMs; b >= 0 && now >= 0 {
		lo = now - b // no overflow: both are non-negative
	}
	if a := tc.MessageTimestampAfterMaxMs; a >= 0 && math.MaxInt64-now > a {
		hi = now + a
	}
	return lo, hi
}

// timestampErrors checks the records of a validated batch produced to a
// CreateTime topic against timestampRange, as Kafka's LogValidator does
// (Kafka 4's default message.timestamp.after.max.ms of one hour refuses
// a producer whose clock runs more than an hour ahead): it returns the
// partition's message and, for Produce v8+ (KIP-467), one record error
// per record out of range with its index in the batch; the caller answers
// INVALID_TIMESTAMP. A record without a timestamp (-1) is never out of
// range.
//
// The batch header's first and max timestamps decide whether the records
// are decoded at all, so a produce in range costs no decompression: a
// batch whose header claims both in range while a record is not (no
// client writes such a header: the first record's timestamp is the base
// and the max is the max) is accepted, where Kafka, which reads every
// record, would refuse it.
func timestampErrors(h wire.BatchHeader, batch []byte, tc config.TopicConfig, now int64, topic string, partition int32) (string, []kmsg.ProduceResponseTopicPartitionErrorRecord, bool) {
	lo, hi := timestampRange(tc, now)
	outside := func(ts int64) bool { return ts != -1 && (ts < lo || ts > hi) }
	if !outside(h.BaseTimestamp) && !outside(h.MaxTimestamp) {
		return "", nil, false
	}
	errs, n, err := recordErrors(batch, func(r wire.RecordInfo) (string, bool) {
		ts := h.BaseTimestamp + r.TimestampDelta
		if h.BaseTimestamp == -1 || !outside(ts) {
			return "", false
		}
		return fmt.Sprintf("Timestamp %d of the record at offset delta %d in topic partition %s-%d is out of range; the broker accepts [%d, %d] (message.timestamp.before.max.ms, message.timestamp.after.max.ms)",
			ts, r.OffsetDelta, topic, partition, lo, hi), true
	})
	if err != nil {
		return "The batch's record timestamps are out of range and its records do not decode", nil, true
	}
	if len(errs) == 0 {
		// The header is out of range but no record is: Kafka checks
		// the records only, and takes the batch.
		return "", nil, false
	}
	return fmt.Sprintf("%d of the batch's %d records have a timestamp out of range (see record_errors); the first, at index %d: %s",
		len(errs), n, errs[0].RelativeOffset, *errs[0].ErrorMessage), errs, true
}
