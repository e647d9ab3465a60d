package handlers

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// Produce, key 0, versions 3-13.
//
//   - v3 is the first version with record batch v2 and the transactional
//     id; older versions carry message sets v0/v1, which we do not store,
//     so they are not advertised.
//   - acks must be -1, 0 or 1, else every partition gets
//     INVALID_REQUIRED_ACKS. acks=1 answers once the batch is in the
//     leader's log (and fsynced when flush.messages says so); acks=-1 first
//     needs an ISR of at least min.insync.replicas (else
//     NOT_ENOUGH_REPLICAS, nothing appended), then waits until the high
//     watermark passes the batch (replica.Partition: the ISR has it),
//     answering REQUEST_TIMED_OUT at timeout_ms and
//     NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
//     min.insync.replicas meanwhile. With ISR = {this node} that is at
//     once. acks=0 gets no response at all. A partition this node does
//     not lead is NOT_LEADER_OR_FOLLOWER with the current leader and its
//     endpoint on the request's listener (v10+, KIP-951).
//   - v5 adds log_start_offset; v7 allows zstd (before v7 a zstd batch is
//     UNSUPPORTED_COMPRESSION_TYPE); v8 adds record_errors and
//     error_message; v9 is flexible; v10 current leader hints; v13 names
//     topics by id (unknown id: UNKNOWN_TOPIC_ID).
//   - Each batch is validated by wire.ValidateProduce (CRC-32C ->
//     CORRUPT_MESSAGE, size over max.message.bytes -> MESSAGE_TOO_LARGE,
//     records that do not match their framing or count -> INVALID_RECORD;
//     a compressed batch is decompressed and walked as Kafka does, a
//     payload that does not decompress -> UNKNOWN_SERVER_ERROR; a base
//     offset other than 0 -> INVALID_RECORD), stamped with the leader
//     epoch, rebuilt when the topic's compression.type names a codec other
//     than the batch's (wire.RecompressLimited: records renumbered, over
//     max.message.bytes -> MESSAGE_TOO_LARGE), and appended with offsets
//     assigned in place. A compressed batch kept in its codec whose offset
//     deltas are not 0..n-1 is UNKNOWN_SERVER_ERROR, as Kafka 4.4 answers
//     it; the max timestamp stored is the largest record timestamp. message.timestamp.type=LogAppendTime
//     overwrites the batch's max timestamp with the broker's clock and the
//     response carries log_append_time.
//   - A topic whose cleanup.policy includes compact refuses records
//     without a key with INVALID_RECORD (87), as Kafka does: compaction
//     keeps the latest record per key, so a keyless one has no meaning.
//     v8+ lists each keyless record's batch index in record_errors.
//   - A CreateTime topic refuses a batch with a record timestamp older
//     than message.timestamp.before.max.ms or further ahead than
//     message.timestamp.after.max.ms (Kafka 4: one hour) with
//     INVALID_TIMESTAMP (32), the records in record_errors
//     (produce_timestamps.go).
//   - A batch with a producer id is checked against the partition's
//     producer state before the append (producer_state.go): an older
//     epoch is INVALID_PRODUCER_EPOCH, a sequence gap
//     OUT_OF_ORDER_SEQUENCE_NUMBER, and a retry of one of the producer's
//     last 5 batches succeeds with the original base offset without a
//     second append.
//   - A transactional batch (KIP-890 part 1, with
//     transaction.partition.verification.enable) must belong to a
//     partition the producer added to its open transaction: the first
//     batch of a transaction in a partition is checked with the
//     transaction coordinator (INVALID_TXN_STATE when it was not added,
//     TRANSACTION_ABORTABLE at v11, the coordinator's fencing errors for
//     an old epoch, NOT_ENOUGH_REPLICAS when the coordinator cannot
//     answer: produceVerifyAnswer); later ones pass on the partition's
//     producer state. A transactional batch without a transactional id
//     in the request is INVALID_TXN_STATE too. Every refusal is logged
//     (txn_refusal_log.go).
//   - The internal topics (__consumer_offsets, __transaction_state) are
//     written by the coordinators only: a client's Produce to them is
//     INVALID_TOPIC_EXCEPTION "Cannot append to internal topic X", as in
//     Kafka's ReplicaManager, unless its client id is "__admin_client"
//     (Kafka's AdminUtils.ADMIN_CLIENT_ID escape hatch, kept for parity;
//     the coordinators skip records they cannot decode when loading).
func handleProduce(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	v := r.Header.APIVersion
	img := d.Controller.Image()

	var waits []*ackWait
	badAcks := req.Acks != -1 && req.Acks != 0 && req.Acks != 1
	// Transactional records without a transactional id: Kafka 4.4 answers
	// the whole request TRANSACTIONAL_ID_AUTHORIZATION_FAILED before
	// looking at any partition (KafkaApis.handleProduceRequest with
	// RequestUtils.hasTransactionalRecords; compat-tests/diff fuzzing).
	txnNoID := req.TransactionID == nil && hasTransactionalBatch(req)
	internalAllowed := r.Header.ClientID != nil && *r.Header.ClientID == adminClientID
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.TopicID = rt.TopicID
		var t *controller.Topic
		if v >= 13 {
			t = topicByID(img, rt.TopicID)
		} else {
			t = topicByName(img, rt.Topic)
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			// Kafka 4.4's order (KafkaApis.handleProduceRequest, then
			// ReplicaManager.appendRecords): an unknown topic or
			// partition first, then the acks, then the rest.
			switch {
			case txnNoID:
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			case t == nil && v >= 13:
				sp.ErrorCode = kerr.UnknownTopicID.Code
			case t == nil || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case badAcks:
				sp.ErrorCode = kerr.InvalidRequiredAcks.Code
			case isInternalTopic(t.Name) && !internalAllowed:
				sp.ErrorCode = kerr.InvalidTopicException.Code
				msg := "Cannot append to internal topic " + t.Name
				sp.ErrorMessage = &msg
			default:
				if w := d.producePartition(img, t, &rp, v, req.Acks, req.TransactionID, &sp); w != nil {
					w.topic, w.part = len(resp.Topics), len(st.Partitions)
					waits = append(waits, w)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) > 0 {
		// Kafka's DelayedProduce: all partitions wait together, until
		// the request's timeout. The deadline's context (a timer and
		// three allocations) is made only when some partition's high
		// watermark is not there yet: with one in-sync replica it always
		// is, and every acks=all produce used to pay for one.
		ctx := context.Background()
		waitStart := time.Now()
		defer func() { r.Remote = time.Since(waitStart) }()
		for _, w := range waits {
			if w.replica.HighWatermark() < w.offset {
				// The appends are done, in request order: the
				// connection's later requests need not wait for the
				// ISR (their responses still follow this one's).
				r.Detach()
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond)
				defer cancel()
				break
			}
		}
		for _, w := range waits {
			// Without a deadline each wait returns at once: a leader's
			// high watermark never moves back within its epoch, and a
			// new epoch answers NOT_LEADER_OR_FOLLOWER.
			if code := w.replica.WaitForHighWatermark(ctx, w.leaderEpoch, w.offset); code != 0 {
				p := &resp.Topics[w.topic].Partitions[w.part]
				p.ErrorCode = code
				if code == kerr.NotLeaderForPartition.Code && v >= 10 {
					p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = w.replica.Leader()
				}
			}
		}
	}
	if v >= 10 {
		// KIP-951: the endpoints of the leaders named in CurrentLeader,
		// on the request's listener (leaderEndpoint), as Kafka.
		seen := map[int32]bool{}
		img = d.Controller.Image() // the leaders may be newer than the request's image
		for _, st := range resp.Topics {
			for _, sp := range st.Partitions {
				id := sp.CurrentLeader.LeaderID
				if sp.ErrorCode != kerr.NotLeaderForPartition.Code || id < 0 || seen[id] {
					continue
				}
				seen[id] = true
				if b, host, port, ok := leaderEndpoint(img, id, r.ListenerName); ok {
					pb := kmsg.NewProduceResponseBroker()
					pb.NodeID, pb.Host, pb.Port, pb.Rack = b.ID, host, port, b.Rack
					resp.Brokers = append(resp.Brokers, pb)
				}
			}
		}
	}
	if req.Acks == 0 {
		return nil, nil
	}
	return resp, nil
}

// adminClientID is the client id that Kafka lets write to internal topics
// (AdminUtils.ADMIN_CLIENT_ID).
const adminClientID = "__admin_client"

func (d *Deps) producePartition(img *controller.Image, t *controller.Topic, rp *kmsg.ProduceRequestTopicPartition, v int16, acks int16, txnID *string, sp *kmsg.ProduceResponseTopicPartition) *ackWait {
	ref := d.lookupPartition(img, t, rp.Partition)
	if ref.code != 0 {
		sp.ErrorCode = ref.code
		if ref.code == kerr.NotLeaderForPartition.Code && v >= 10 {
			sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = ref.currentLeader()
		}
		return nil
	}
	tc := d.topicConfig(t)
	var stats wire.RecordStats
	batches, err := wire.ValidateProduce(rp.Records, wire.ValidateOptions{
		MaxBatchBytes:  tc.MaxMessageBytes,
		ProduceVersion: v,
		// Compressed batches are decompressed and their records
		// walked, as Kafka's LogValidator does.
		DeepValidate: true,
		Stats:        &stats,
	})
	if err != nil {
		var be *wire.BatchError
		if errors.As(err, &be) {
			sp.ErrorCode = be.Code
			msg := be.Reason
			sp.ErrorMessage = &msg
		} else {
			sp.ErrorCode = kerr.CorruptMessage.Code
		}
		// Kafka's ReplicaManager answers a corrupt or too large batch
		// with log_start_offset -1 and any other refusal of its records
		// (INVALID_RECORD, a stream that does not decompress, ...) with
		// the partition's log start offset (compat-tests/diff).
		if sp.ErrorCode != kerr.CorruptMessage.Code && sp.ErrorCode != kerr.MessageTooLarge.Code {
			sp.LogStartOffset = ref.log.LogStartOffset()
		}
		return nil
	}
	if tc.CleanupPolicyCompact {
		if msg, errs, ok := keylessRecords(rp.Records, t.Name, rp.Partition); ok {
			sp.ErrorCode = kerr.InvalidRecord.Code
			sp.ErrorMessage = &msg
			sp.ErrorRecords = errs
			return nil
		}
	}
	if tc.MessageTimestampType != "LogAppendTime" {
		if msg, errs, ok := timestampErrors(batches[0], rp.Records, tc, d.Now().UnixMilli(), t.Name, rp.Partition); ok {
			sp.ErrorCode = kerr.InvalidTimestamp.Code
			sp.ErrorMessage = &msg
			sp.ErrorRecords = errs
			return nil
		}
	}
	// Produce v3+ carries exactly one batch (ValidateProduce enforces it),
	// so batches[0] is the whole of rp.Records.
	records := rp.Records
	want, rebuild := codecFor(tc.CompressionType)
	rebuild = rebuild && batches[0].Compression() != want
	switch {
	case rebuild:
		// Kafka's LogValidator rebuilds the batch in the topic's codec
		// (records renumbered, max timestamp recomputed: Recompress).
		re, err := wire.RecompressLimited(records, want, int(tc.MaxMessageBytes))
		if errors.Is(err, wire.ErrRebuiltTooLarge) {
			// Kafka checks the rebuilt batch against
			// max.message.bytes (RecordTooLargeException, log
			// start offset -1): a small compressed batch may be
			// rebuilt uncompressed far larger.
			sp.ErrorCode = kerr.MessageTooLarge.Code
			msg := err.Error()
			sp.ErrorMessage = &msg
			return nil
		}
		if err != nil {
			// The batch decompressed in ValidateProduce; what fails
			// here is the full read of each record, which Kafka does
			// only when it rebuilds the batch: INVALID_RECORD.
			sp.ErrorCode = kerr.InvalidRecord.Code
			msg := err.Error()
			sp.ErrorMessage = &msg
			sp.LogStartOffset = ref.log.LogStartOffset()
			return nil
		}
		records = re
	case !stats.OffsetsInOrder:
		// A compressed batch kept in its codec whose offset deltas
		// are not 0..n-1: Kafka 4.4 goes to rebuild it from the records
		// it read without keys and values, and fails
		// (UNKNOWN_SERVER_ERROR, no message; compat-tests/FINDINGS.md).
		sp.ErrorCode = kerr.UnknownServerError.Code
		msg := "The server experienced an unexpected error when processing the request: a compressed batch's record offset deltas are not 0, 1, 2..."
		sp.ErrorMessage = &msg
		sp.LogStartOffset = ref.log.LogStartOffset()
		return nil
	case tc.MessageTimestampType != "LogAppendTime" && (batches[0].MaxTimestamp != stats.MaxTimestamp || batches[0].IsLogAppendTime()):
		// Kafka writes the largest record timestamp into the batch
		// it keeps, whatever the producer wrote there.
		wire.SetMaxTimestamp(records, stats.MaxTimestamp)
	}
	var appendTime int64 = -1
	if tc.MessageTimestampType == "LogAppendTime" {
		appendTime = d.Now().UnixMilli()
	}
	// The transaction coordinator is asked before the append, outside
	// the partition's append path (it may write to __transaction_state).
	h := batches[0]
	idempotent := h.ProducerID >= 0 && d.Idempotence != nil
	tp := storage.TopicPartition{Topic: t.Name, Partition: rp.Partition}
	var guard *uint64
	if idempotent {
		var code int16
		var msg string
		if guard, code, msg = d.verifyTransactional(h, v, txnID, tp, ref.log); code != 0 {
			sp.ErrorCode = code
			if msg != "" {
				sp.ErrorMessage = &msg
			}
			return nil
		}
	}
	var res idempotentAppend
	var wait *ackWait
	_, epoch, lcode, appendErr := ref.replica.AppendAsLeader(acks, func(l *storage.Log, leaderEpoch int32) (storage.AppendInfo, error) {
		wire.SetPartitionLeaderEpoch(records, leaderEpoch)
		doAppend := func() (storage.AppendInfo, error) {
			if appendTime >= 0 {
				return l.AppendWithLogAppendTime(records, appendTime)
			}
			return l.Append(records)
		}
		if idempotent {
			res = d.Idempotence.appendIdempotent(tp, l, h, d.Now(), guard, doAppend)
			return res.info, res.err
		}
		res.info, res.err = doAppend()
		return res.info, res.err
	})
	switch {
	case lcode != 0:
		sp.ErrorCode = lcode
		return nil
	case appendErr == nil && res.code != 0:
		if res.staleGuard {
			d.logTxnRefusal("a marker was appended since the verification", txnIDString(txnID), h, tp, ref.log, res.code, res.code)
		}
		// A rejected sequence or epoch: Kafka still reports the log
		// start offset (its generic failed-append path), unlike the
		// lookup errors above (compat-tests/diff).
		sp.ErrorCode, sp.LogStartOffset = res.code, ref.log.LogStartOffset()
		return nil
	case appendErr == nil && res.duplicate != nil:
		// A retry of a batch already in the log: success with the
		// offset it got the first time, and no second copy.
		sp.BaseOffset, sp.LogStartOffset = res.duplicate.FirstOffset, ref.log.LogStartOffset()
		if acks == -1 {
			wait = &ackWait{replica: ref.replica, leaderEpoch: epoch, offset: res.duplicate.LastOffset + 1}
		}
		return wait
	}
	ai := res.info
	sp.BaseOffset, sp.LogStartOffset = ai.FirstOffset, ai.LogStartOffset
	if appendErr != nil {
		sp.BaseOffset, sp.LogStartOffset = -1, -1
		if code := d.closedLogCode(appendErr, t, rp.Partition, v >= 13); code != 0 {
			sp.ErrorCode = code // deleted under the append (closed_log.go)
			return nil
		}
		d.Logger.Error("append failed", "topic", t.Name, "partition", rp.Partition, "err", appendErr)
		sp.ErrorCode = kerr.KafkaStorageError.Code
		return nil
	}
	sp.LogAppendTime = appendTime
	if acks == -1 {
		// acks=all: answered once the ISR has the batch (handleProduce
		// waits for every partition of the request together).
		wait = &ackWait{replica: ref.replica, leaderEpoch: epoch, offset: ai.LastOffset + 1}
	}
	return wait
}

// ackWait is an acks=-1 partition waiting for its high watermark.
type ackWait struct {
	replica     *replica.Partition
	leaderEpoch int32
	offset      int64
	topic, part int // indexes in the response
}

// keylessRecords reports the records without a key in the (validated)
// batch of a produce to a compacted topic: the partition's message and, for
// Produce v8+ (KIP-467), one record error per keyless record with its index
// in the batch, as Kafka's LogValidator answers. A client uses that list to
// fail only those records with INVALID_RECORD and the others of the batch
// with a "part of a bad batch" error (librdkafka's
// _INVALID_DIFFERENT_RECORD); without it every record of the batch fails
// with INVALID_RECORD. An undecodable batch counts as one keyless record
// without an index.
func keylessRecords(batch []byte, topic string, partition int32) (string, []kmsg.ProduceResponseTopicPartitionErrorRecord, bool) {
	msg := fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s-%d", topic, partition)
	errs, n, err := recordErrors(batch, func(r wire.RecordInfo) (string, bool) { return msg, r.KeyNull })
	if err != nil {
		return "Compacted topic cannot accept a batch whose records do not decode", nil, true
	}
	if len(errs) == 0 {
		return "", nil, false
	}
	return fmt.Sprintf("%d of the batch's %d records were rejected (see record_errors); the first, at index %d: %s",
		len(errs), n, errs[0].RelativeOffset, *errs[0].ErrorMessage), errs, true
}

// recordErrors lists the records of a batch that refuse refuses, each with
// its index in the batch and refuse's message, as Produce v8+ answers them
// in record_errors (KIP-467), and the number of records. The records are
// read as Kafka's LogValidator reads them (wire.VisitRecords: streamed out
// of a compressed batch, so a batch that decompresses to much more than it
// weighs costs a small window, not its decompressed size).
func recordErrors(batch []byte, refuse func(wire.RecordInfo) (msg string, refused bool)) ([]kmsg.ProduceResponseTopicPartitionErrorRecord, int32, error) {
	var errs []kmsg.ProduceResponseTopicPartitionErrorRecord
	var n int32
	err := wire.VisitRecords(batch, func(i int32, r wire.RecordInfo) {
		n++
		msg, refused := refuse(r)
		if !refused {
			return
		}
		e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		e.RelativeOffset = i
		e.ErrorMessage = &msg
		errs = append(errs, e)
	})
	return errs, n, err
}

// codecFor maps a topic compression.type to the codec batches must be
// stored in; "producer" (keep what the producer sent) reports false.
func codecFor(compressionType string) (wire.Compression, bool) {
	switch compressionType {
	case "uncompressed", "none":
		return wire.CompressionNone, true
	case "gzip":
		return wire.CompressionGzip, true
	case "snappy":
		return wire.CompressionSnappy, true
	case "lz4":
		return wire.CompressionLZ4, true
	case "zstd":
		return wire.CompressionZstd, true
	}
	return 0, false
}

// verifyTransactional checks a transactional batch against the transaction
// coordinator; code 0 lets it through, with the guard to append under
// (nil when no verification was needed). Produce v12+ comes from a
// transaction version 2 client (KIP-890 part 2), which sends no
// AddPartitionsToTxn: the first batch of a transaction in a partition adds
// the partition itself, whatever transaction.partition.verification.enable
// says. Older versions are only verified, when that setting is on. A
// refusal comes with the code and message of the Produce response
// (produceVerifyAnswer).
func (d *Deps) verifyTransactional(h wire.BatchHeader, version int16, txnID *string, tp storage.TopicPartition, l *storage.Log) (*uint64, int16, string) {
	c := txnCoordinator(d)
	implicitAdd := version >= 12
	if !h.IsTransactional() || c == nil || (!implicitAdd && !d.Config.TransactionPartitionVerificationEnable) {
		return nil, 0, ""
	}
	if txnID == nil || *txnID == "" {
		d.logTxnRefusal("no transactional id in the request", "", h, tp, l, kerr.InvalidTxnState.Code, kerr.InvalidTxnState.Code)
		return nil, kerr.InvalidTxnState.Code, ""
	}
	ongoing, guard := d.Idempotence.txnGuard(tp, l, h.ProducerID, h.ProducerEpoch, d.Now())
	if ongoing {
		return &guard, 0, ""
	}
	// The coordinator may be on another broker: txnCheck asks it there.
	if coordCode := d.txnCheck(context.Background(), c, implicitAdd, *txnID, h.ProducerID, h.ProducerEpoch, tp); coordCode != 0 {
		code, msg := produceVerifyAnswer(coordCode, version)
		d.logTxnRefusal("transaction coordinator verification", *txnID, h, tp, l, coordCode, code)
		return nil, code, msg
	}
	return &guard, 0, ""
}

// hasTransactionalBatch reports whether a batch of any partition of req
// has the transactional attribute (Kafka's RequestUtils.hasTransactionalRecords
// reads every batch header; a batch cut short ends the walk).
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			b := p.Records
			for len(b) >= wire.BatchHeaderSize {
				n := int(int32(binary.BigEndian.Uint32(b[8:]))) + 12
				if b[16] == 2 && binary.BigEndian.Uint16(b[21:])&0x10 != 0 {
					return true
				}
				if n < wire.BatchHeaderSize || n > len(b) {
					break
				}
				b = b[n:]
			}
		}
	}
	return false
}
