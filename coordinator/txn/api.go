package txn

import (
	"context"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fencedCode maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for request
// versions before KIP-588 taught clients the new code (InitProducerId v4,
// AddPartitionsToTxn, AddOffsetsToTxn and EndTxn v2).
func fencedCode(code, version, since int16) int16 {
	if code == kerr.ProducerFenced.Code && version < since {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// initReply is the answer of InitProducerId on the shard.
type initReply struct {
	producerID int64
	epoch      int16
	code       int16
}

// InitProducerID serves InitProducerId v0-5 for a transactional id (the
// broker answers requests without one itself). A new id gets a fresh
// producer id at epoch 0; a known one an epoch bump, or a new producer id
// when the epoch is exhausted. An ongoing transaction is first aborted
// with a fencing epoch bump: where Kafka answers CONCURRENT_TRANSACTIONS
// and lets the client retry, samsa waits for the abort's markers and then
// answers as the retry would (CONCURRENT_TRANSACTIONS still, if a marker
// could not be written by Options.WriteTimeout after the request came;
// COORDINATOR_NOT_AVAILABLE if a write was not committed by then).
// KIP-360 (v3+): a given producer id and epoch must be the current or
// previous ones.
func (c *Coordinator) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	fail := func(code int16) *kmsg.InitProducerIDResponse {
		resp.ErrorCode = fencedCode(code, req.Version, 4)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp
	}
	if req.TransactionalID == nil || *req.TransactionalID == "" {
		return fail(kerr.InvalidRequest.Code)
	}
	id := *req.TransactionalID
	if req.TransactionTimeoutMillis <= 0 || int64(req.TransactionTimeoutMillis) > c.opts.MaxTimeout.Milliseconds() {
		return fail(kerr.InvalidTransactionTimeout.Code)
	}
	var expected *producerIDAndEpoch
	if req.Version >= 3 {
		switch {
		case req.ProducerID == -1 && req.ProducerEpoch == -1:
		case req.ProducerID == -1 || req.ProducerEpoch == -1:
			return fail(kerr.InvalidRequest.Code)
		default:
			expected = &producerIDAndEpoch{producerID: req.ProducerID, epoch: req.ProducerEpoch}
		}
	}
	s, code := c.shardFor(id)
	if code != 0 {
		return fail(code)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	r := &request{}
	r.awaitingWrite.Store(true)
	ch := make(chan initReply, 1)
	if code := s.call(ctx, func() {
		s.forID(id, r, func() {
			s.initProducerID(id, req.TransactionTimeoutMillis, expected, r, func(x initReply) { ch <- x })
		})
	}); code != 0 {
		return fail(code)
	}
	x, ok, stopped := await(ctx, s, r, ch)
	switch {
	case !ok && !stopped && !r.awaitingWrite.Load():
		return fail(kerr.ConcurrentTransactions.Code) // markers still pending
	case !ok:
		return fail(timedOutCode(stopped))
	case x.code != 0:
		return fail(x.code)
	}
	resp.ProducerID, resp.ProducerEpoch = x.producerID, x.epoch
	return resp
}

// initProducerID is InitProducerId on the shard; reply is called at most
// once, maybe later (after a write is committed, after an abort's
// markers); not at all if the shard stops first, nor after r's caller
// gave up waiting for markers.
// REQUIRES: on the shard goroutine; no write of id in flight.
func (s *shard) initProducerID(id string, timeoutMs int32, expected *producerIDAndEpoch, r *request, reply func(initReply)) {
	failed := func(code int16) { reply(initReply{producerID: -1, epoch: -1, code: code}) }
	retryAfter := func(code int16) {
		switch {
		case code != 0:
			failed(code)
		case !r.gaveUp.Load():
			r.awaitingWrite.Store(true)
			s.forID(id, r, func() { s.initProducerID(id, timeoutMs, expected, r, reply) })
		}
	}
	nowMs := s.now().UnixMilli()
	m := s.txns[id]
	if m == nil {
		pid, err := s.c.opts.ProducerIDs.Next()
		if err != nil {
			s.logger.Warn("txn: allocating a producer id failed", "err", err)
			failed(kerr.CoordinatorNotAvailable.Code)
			return
		}
		m = newTxnMeta(id, pid, timeoutMs, nowMs)
	}
	if _, busy := s.pending[id]; busy {
		r.awaitingWrite.Store(false)
		s.wait(id, retryAfter)
		return
	}
	if expected != nil && !m.validExpectation(*expected) {
		failed(kerr.ProducerFenced.Code)
		return
	}
	switch {
	case m.state == Ongoing:
		s.write(id, m.fence(nowMs), func(code int16) {
			if code != 0 {
				failed(code)
				return
			}
			r.awaitingWrite.Store(false)
			s.prepared(id, retryAfter)
		})
	case m.completed():
		var next *txnMeta
		if m.needsRotation(expected) {
			pid, err := s.c.opts.ProducerIDs.Next()
			if err != nil {
				s.logger.Warn("txn: allocating a producer id failed", "err", err)
				failed(kerr.CoordinatorNotAvailable.Code)
				return
			}
			next = m.initRotate(pid, expected, timeoutMs, nowMs)
		} else {
			var code int16
			if next, code = m.initBump(expected, timeoutMs, nowMs); code != 0 {
				failed(code)
				return
			}
		}
		s.write(id, next, func(code int16) {
			if code != 0 {
				failed(code)
				return
			}
			reply(initReply{producerID: next.producerID, epoch: next.epoch})
		})
	default:
		failed(kerr.ConcurrentTransactions.Code)
	}
}

// partitionsOf flattens request topics, keeping their order.
func partitionsOf[T any](topics []T, name func(*T) string, parts func(*T) []int32) []TopicPartition {
	var out []TopicPartition
	for i := range topics {
		for _, p := range parts(&topics[i]) {
			out = append(out, TopicPartition{Topic: name(&topics[i]), Partition: p})
		}
	}
	return out
}

// AddPartitionsToTxn serves AddPartitionsToTxn v0-5. v0-3 (clients) add
// partitions to one transaction; v4+ (brokers) carry a batch of
// transactions, each either added or, with VerifyOnly (KIP-890 part 1),
// only checked: per partition 0 if in the ongoing transaction, else
// INVALID_TXN_STATE, without writing. v5 without VerifyOnly is the implicit
// add of transaction version 2 (AddPartitionsImplicit), sent by the leader
// of a partition a TV2 producer wrote to. As in Kafka, a request naming an
// unknown partition adds nothing: those get UNKNOWN_TOPIC_OR_PARTITION and
// the others OPERATION_NOT_ATTEMPTED.
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version <= 3 {
		tps := partitionsOf(req.Topics,
			func(t *kmsg.AddPartitionsToTxnRequestTopic) string { return t.Topic },
			func(t *kmsg.AddPartitionsToTxnRequestTopic) []int32 { return t.Partitions })
		codes := c.addPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps, false, req.Version)
		for _, t := range req.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition = p
				rp.ErrorCode = codes[TopicPartition{Topic: t.Topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, tx := range req.Transactions {
		tps := partitionsOf(tx.Topics,
			func(t *kmsg.AddPartitionsToTxnRequestTransactionTopic) string { return t.Topic },
			func(t *kmsg.AddPartitionsToTxnRequestTransactionTopic) []int32 { return t.Partitions })
		var codes map[TopicPartition]int16
		if !tx.VerifyOnly && req.Version >= 5 {
			// A partition leader adding a partition for a transaction
			// version 2 producer (Produce v12+, TxnOffsetCommit v5)
			// whose coordinator is this broker, as Kafka's
			// AddPartitionsToTxnManager sends it: the implicit add.
			codes = make(map[TopicPartition]int16, len(tps))
			if !c.judgePartitions(tps, req.Version, codes) {
				for _, tp := range tps {
					codes[tp] = c.AddPartitionsImplicit(ctx, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tp)
				}
			}
		} else {
			codes = c.addPartitions(ctx, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tps, tx.VerifyOnly, req.Version)
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = tx.TransactionalID
		for _, t := range tx.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition = p
				rp.ErrorCode = codes[TopicPartition{Topic: t.Topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp
}

// judgePartitions judges tps as Kafka 4.4's KafkaApis does before it
// looks at the transaction, for every version and verify-only requests
// too: below v4 (clients) an internal topic is TOPIC_AUTHORIZATION_FAILED
// (Topic.isInternal), a partition that does not exist
// UNKNOWN_TOPIC_OR_PARTITION, and then the others are
// OPERATION_NOT_ATTEMPTED and nothing is added or verified
// (compat-tests/diff fuzzing, javap). It reports whether it filled codes.
func (c *Coordinator) judgePartitions(tps []TopicPartition, version int16, codes map[TopicPartition]int16) bool {
	failed := false
	for _, tp := range tps {
		switch {
		case version < 4 && internalTopic(tp.Topic):
			failed = true
			codes[tp] = kerr.TopicAuthorizationFailed.Code
		case !c.opts.PartitionExists(tp.Topic, tp.Partition):
			failed = true
			codes[tp] = kerr.UnknownTopicOrPartition.Code
		}
	}
	if !failed {
		return false
	}
	for _, tp := range tps {
		if _, ok := codes[tp]; !ok {
			codes[tp] = kerr.OperationNotAttempted.Code
		}
	}
	return true
}

// addPartitions adds tps to (or, verifyOnly, checks them against) one
// transaction and returns the code of every partition.
func (c *Coordinator) addPartitions(ctx context.Context, id string, producerID int64, epoch int16, tps []TopicPartition, verifyOnly bool, version int16) map[TopicPartition]int16 {
	codes := make(map[TopicPartition]int16, len(tps))
	all := func(code int16) map[TopicPartition]int16 {
		code = fencedCode(code, version, 2)
		for _, tp := range tps {
			codes[tp] = code
		}
		return codes
	}
	if c.judgePartitions(tps, version, codes) {
		return codes
	}
	if id == "" {
		return all(kerr.InvalidRequest.Code)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	s, code := c.shardFor(id)
	if code != 0 {
		return all(code)
	}
	// verified are the codes of a verify-only request, made on the
	// shard (nil for the others, answered with result alone).
	type added struct {
		result   int16
		verified map[TopicPartition]int16
	}
	r := &request{}
	ch := make(chan added, 1)
	if code := s.call(ctx, func() {
		s.forID(id, r, func() {
			m := s.txns[id]
			if code := m.checkProducer(producerID, epoch); code != 0 {
				ch <- added{result: code}
				return
			}
			if verifyOnly {
				if m.preparing() {
					ch <- added{result: kerr.ConcurrentTransactions.Code}
					return
				}
				verified := make(map[TopicPartition]int16, len(tps))
				for _, tp := range tps {
					verified[tp] = m.verify(producerID, epoch, tp)
					// Kafka 4.4 answers a verify-only request for a
					// partition outside the transaction with
					// TRANSACTION_ABORTABLE (compat-tests/diff).
					if verified[tp] == kerr.InvalidTxnState.Code {
						verified[tp] = kerr.TransactionAbortable.Code
					}
				}
				ch <- added{verified: verified}
				return
			}
			s.addPartitionsLocked(m, tps, func(code int16) { ch <- added{result: code} })
		})
	}); code != 0 {
		return all(code)
	}
	res, ok, stopped := await(ctx, s, r, ch)
	switch {
	case !ok:
		return all(timedOutCode(stopped))
	case res.verified == nil:
		return all(res.result)
	}
	return res.verified
}

// addPartitionsLocked adds tps to m's transaction, starting one if none is
// ongoing, writes the new state and calls done with the outcome (at once
// when nothing changes).
// REQUIRES: on the shard goroutine; m passed checkProducer; no write of
// m.id in flight.
func (s *shard) addPartitionsLocked(m *txnMeta, tps []TopicPartition, done func(code int16)) {
	next, code := m.addPartitions(tps, s.now().UnixMilli())
	if code != 0 || next == nil {
		done(code)
		return
	}
	s.write(m.id, next, done)
}

// AddOffsetsToTxn serves AddOffsetsToTxn v0-4: it adds the group's
// __consumer_offsets partition (groupPartition, which the broker computes)
// to the transaction, as Kafka does, so that EndTxn sends it a marker.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest, groupPartition TopicPartition) *kmsg.AddOffsetsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if req.TransactionalID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	resp.ErrorCode = fencedCode(c.writeCall(ctx, req.TransactionalID, func(s *shard, done func(int16)) {
		m := s.txns[req.TransactionalID]
		if code := m.checkProducer(req.ProducerID, req.ProducerEpoch); code != 0 {
			done(code)
			return
		}
		s.addPartitionsLocked(m, []TopicPartition{groupPartition}, done)
	}), req.Version, 2)
	return resp
}

// EndTxn serves EndTxn v0-5. Commit or abort of an ongoing transaction
// writes PrepareCommit/PrepareAbort, then sends the markers, then writes
// CompleteCommit/CompleteAbort. The answer (success) goes out once the
// first marker round ended: the outcome is decided and durable once the
// Prepare state is written (Kafka answers there), and waiting for the
// round spares the client CONCURRENT_TRANSACTIONS on its next request in
// the common case. Markers that failed are retried in the background;
// until they are written, requests for the id get CONCURRENT_TRANSACTIONS.
// Ending a completed transaction again the same way succeeds (a retry);
// otherwise INVALID_TXN_STATE. v5 is transaction version 2 (KIP-890
// part 2): every EndTxn bumps the epoch (or, exhausted, moves to a new
// producer id) and answers the producer id and epoch to continue with;
// see txnMeta.endTxnV2 for retries and the abort without a transaction.
func (c *Coordinator) EndTxn(ctx context.Context, req *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	fail := func(code int16) *kmsg.EndTxnResponse {
		resp.ErrorCode = fencedCode(code, req.Version, 2)
		return resp
	}
	if req.TransactionalID == "" {
		return fail(kerr.InvalidRequest.Code)
	}
	s, code := c.shardFor(req.TransactionalID)
	if code != 0 {
		return fail(code)
	}
	id := req.TransactionalID
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	// ended is the outcome of the check and of the Prepare write: an
	// error, or the producer id and epoch to answer (-1: the request's),
	// and whether a Prepare was written (its markers are on their way).
	type ended struct {
		code       int16
		producerID int64
		epoch      int16
		prepared   bool
	}
	r := &request{}
	endedCh := make(chan ended, 1)
	markersCh := make(chan struct{}, 1)
	if code := s.call(ctx, func() {
		s.forID(id, r, func() {
			m := s.txns[id]
			var next *txnMeta
			var code int16
			if req.Version >= 5 {
				next, code = s.endTxnV2(m, req)
				if code == 0 && next == nil {
					// A retry of an EndTxn that completed: the producer
					// continues with what it would have been told.
					endedCh <- ended{producerID: m.producerID, epoch: m.epoch}
					return
				}
			} else if code = m.checkProducer(req.ProducerID, req.ProducerEpoch); code == 0 {
				next, code = m.endTxn(req.Commit, s.now().UnixMilli())
			}
			if code != 0 || next == nil {
				endedCh <- ended{code: code, producerID: -1}
				return
			}
			s.write(id, next, func(code int16) {
				if code != 0 {
					endedCh <- ended{code: code}
					return
				}
				e := ended{producerID: next.producerID, epoch: next.epoch, prepared: true}
				if req.Version >= 5 {
					e.producerID, e.epoch = next.answerV2()
				}
				endedCh <- e
				s.prepared(id, func(int16) { markersCh <- struct{}{} })
			})
		})
	}); code != 0 {
		return fail(code)
	}
	e, ok, stopped := await(ctx, s, r, endedCh)
	switch {
	case !ok:
		return fail(timedOutCode(stopped))
	case e.code != 0:
		return fail(e.code)
	}
	resp.ProducerID, resp.ProducerEpoch = e.producerID, e.epoch
	if e.producerID == -1 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch
	}
	if e.prepared {
		// The Prepare state is committed: the outcome is decided and
		// the markers follow in the background if the wait ends
		// first, so the answer is success either way.
		await(ctx, s, r, markersCh)
	}
	return resp
}

// endTxnV2 is the check and transition of EndTxn v5+ on the shard.
// REQUIRES: on the shard goroutine.
func (s *shard) endTxnV2(m *txnMeta, req *kmsg.EndTxnRequest) (*txnMeta, int16) {
	kind := m.classifyV2(req.ProducerID, req.ProducerEpoch)
	switch {
	case m.rotatingTo(req.ProducerID):
		return nil, kerr.ConcurrentTransactions.Code
	case kind == endTxnUnknownID:
		return nil, kerr.InvalidProducerIDMapping.Code
	case kind == endTxnFenced:
		return nil, kerr.ProducerFenced.Code
	}
	return m.endTxnV2(req.Commit, kind, s.c.opts.ProducerIDs.Next, s.now().UnixMilli())
}

// AddPartitionsImplicit is the add of transaction version 2 (KIP-890
// part 2): produce v12+ and TxnOffsetCommit v5 carry no AddPartitionsToTxn
// or AddOffsetsToTxn before them, so the broker adds the partition (or the
// group's __consumer_offsets partition) itself, starting a transaction if
// none is ongoing. 0 when added, else the code AddPartitionsToTxn would
// answer (PRODUCER_FENCED reported as INVALID_PRODUCER_EPOCH, as on the
// produce path).
func (c *Coordinator) AddPartitionsImplicit(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, tp TopicPartition) int16 {
	return producePathCode(c.writeCall(ctx, transactionalID, func(s *shard, done func(int16)) {
		m := s.txns[transactionalID]
		if code := m.checkProducer(producerID, producerEpoch); code != 0 {
			done(code)
			return
		}
		if m.state == Ongoing && m.clientTV >= 2 {
			if _, ok := m.partitions[tp]; ok {
				done(0)
				return
			}
		}
		next, code := m.addPartitions([]TopicPartition{tp}, s.now().UnixMilli())
		if code != 0 {
			done(code)
			return
		}
		if next == nil {
			next = m.clone()
		}
		next.clientTV = 2
		s.write(m.id, next, done)
	}))
}

// writeCall runs fn on the shard of transactionalID, after the writes of
// the id in flight (forID), and returns the code fn passes to done, which
// it may call later (after its own write is committed): at most
// Options.WriteTimeout after the call, COORDINATOR_NOT_AVAILABLE then.
// INVALID_REQUEST for an empty id, the shard's code when it cannot
// serve.
func (c *Coordinator) writeCall(ctx context.Context, transactionalID string, fn func(s *shard, done func(code int16))) int16 {
	if transactionalID == "" {
		return kerr.InvalidRequest.Code
	}
	s, code := c.shardFor(transactionalID)
	if code != 0 {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.WriteTimeout)
	defer cancel()
	r := &request{}
	ch := make(chan int16, 1)
	if code := s.call(ctx, func() {
		s.forID(transactionalID, r, func() { fn(s, func(code int16) { ch <- code }) })
	}); code != 0 {
		return code
	}
	result, ok, stopped := await(ctx, s, r, ch)
	if !ok {
		return timedOutCode(stopped)
	}
	return result
}

// producePathCode is a code of the produce path (or TxnOffsetCommit),
// with PRODUCER_FENCED turned into INVALID_PRODUCER_EPOCH as Kafka's
// produce path does.
func producePathCode(code int16) int16 {
	if code == kerr.ProducerFenced.Code {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

// VerifyProduce is the produce-path check (transaction.partition.
// verification.enable, KIP-890 part 1): 0 if tp is in the ongoing
// transaction of transactionalID with this producer id and epoch, else
// INVALID_TXN_STATE (not added, or no transaction ongoing),
// INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH (a stale epoch: Kafka's
// verification says PRODUCER_FENCED and its produce path turns that into
// INVALID_PRODUCER_EPOCH), CONCURRENT_TRANSACTIONS (the transaction is
// completing), NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS. Kafka's
// produce path answers the coordinator codes to old clients as
// NOT_ENOUGH_REPLICAS; that mapping is the caller's.
func (c *Coordinator) VerifyProduce(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, tp TopicPartition) int16 {
	return producePathCode(c.writeCall(ctx, transactionalID, func(s *shard, done func(int16)) {
		done(s.txns[transactionalID].verify(producerID, producerEpoch, tp))
	}))
}

// VerifyTxnOffsetCommit is VerifyProduce for TxnOffsetCommit: 0 if the
// group's __consumer_offsets partition was added (AddOffsetsToTxn) to the
// ongoing transaction; the same codes otherwise.
func (c *Coordinator) VerifyTxnOffsetCommit(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, groupPartition TopicPartition) int16 {
	return c.VerifyProduce(ctx, transactionalID, producerID, producerEpoch, groupPartition)
}

// DescribeTransactions serves DescribeTransactions v0 (KIP-664): per id
// its state, or NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// TRANSACTIONAL_ID_NOT_FOUND (INVALID_REQUEST for an empty id).
func (c *Coordinator) DescribeTransactions(ctx context.Context, req *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		// An id answered with an error has producer id, epoch and start
		// time 0 on the wire, as Kafka 4.4 sends them (compat-tests/diff).
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = 0, 0, 0
		if id == "" {
			st.ErrorCode = kerr.InvalidRequest.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		s, code := c.shardFor(id)
		if code == 0 {
			code = s.call(ctx, func() {
				m := s.txns[id]
				if m == nil {
					st.ErrorCode = kerr.TransactionalIDNotFound.Code
					return
				}
				st.State = m.state.String()
				st.TimeoutMillis = m.timeoutMs
				st.StartTimestamp = m.startMs
				st.ProducerID, st.ProducerEpoch = m.producerID, m.epoch
				for _, tp := range m.sortedPartitions() {
					if n := len(st.Topics); n > 0 && st.Topics[n-1].Topic == tp.Topic {
						st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, tp.Partition)
						continue
					}
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic = tp.Topic
					t.Partitions = []int32{tp.Partition}
					st.Topics = append(st.Topics, t)
				}
			})
		}
		if code != 0 {
			st.ErrorCode = code
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

// ListTransactions serves ListTransactions v0-2 over the loaded
// partitions: state filters (unknown names come back in
// UnknownStateFilters; a filter of only unknown names matches nothing),
// producer id filters, v1's duration filter (KIP-994: only transactions
// whose start is more than DurationFilterMillis ago; as in Kafka the
// formula is now - start, so an Empty id, start -1, always passes) and v2's
// transactional id pattern (RE2, matching the whole id as Kafka's re2j
// matches(); invalid is INVALID_REGULAR_EXPRESSION).
// While any partition is loading the answer is COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) ListTransactions(ctx context.Context, req *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var states []State
	for _, name := range req.StateFilters {
		if st, ok := stateByName(name); ok {
			states = append(states, st)
		} else if !slices.Contains(resp.UnknownStateFilters, name) {
			// Kafka 4.4 collects them in a set: a name sent twice
			// comes back once (compat-tests/diff fuzzing).
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		// Kafka 4.4 (TransactionStateManager) matches the whole id
		// (re2j Matcher.matches), so "t" does not list "t1". The
		// pattern is compiled alone first: wrapped, an invalid one such
		// as "a)|(b" would compile.
		var err error
		if _, err = regexp.Compile(*req.TransactionalIDPattern); err == nil {
			pattern, err = regexp.Compile(`^(?:` + *req.TransactionalIDPattern + `)$`)
		}
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp
		}
	}
	duration := int64(-1)
	if req.Version >= 1 {
		duration = req.DurationFilterMillis
	}
	include := func(m *txnMeta, nowMs int64) bool {
		switch {
		case m.state == Dead:
			return false
		case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, m.producerID):
			return false
		case len(req.StateFilters) > 0 && !slices.Contains(states, m.state):
			return false
		case duration >= 0 && nowMs-m.startMs <= duration:
			return false
		case pattern != nil && !pattern.MatchString(m.id):
			return false
		}
		return true
	}
	var out []kmsg.ListTransactionsResponseTransactionState
	for _, s := range c.shardList() {
		var found []kmsg.ListTransactionsResponseTransactionState
		code := s.call(ctx, func() {
			nowMs := s.now().UnixMilli()
			for _, m := range s.txns {
				if include(m, nowMs) {
					st := kmsg.NewListTransactionsResponseTransactionState()
					st.TransactionalID = m.id
					st.ProducerID = m.producerID
					st.TransactionState = m.state.String()
					found = append(found, st)
				}
			}
		})
		switch code {
		case 0:
			out = append(out, found...)
		case kerr.NotCoordinator.Code:
			// Unloaded meanwhile: no longer ours to list.
		default:
			resp.ErrorCode = code
			return resp
		}
	}
	slices.SortFunc(out, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		if a.TransactionalID < b.TransactionalID {
			return -1
		}
		if a.TransactionalID > b.TransactionalID {
			return 1
		}
		return 0
	})
	resp.TransactionStates = out
	return resp
}

// internalTopic: the topics a client may not add to a transaction (Kafka's
// Topic.isInternal).
func internalTopic(name string) bool {
	return name == "__consumer_offsets" || name == "__transaction_state" || name == "__share_group_state"
}
