package diff

import (
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// scriptTxns runs a committed transaction per level (each transactional
// API at version min(level, its max)), then the invalid cases.
func scriptTxns(s *Session) error {
	levels := int16(0)
	for _, k := range []kmsg.Key{kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.TxnOffsetCommit, kmsg.EndTxn} {
		levels = max(levels, Advertised()[int16(k)].Max)
	}
	for l := int16(0); l <= levels; l++ {
		if err := s.SettleCoordinator(1, fmt.Sprintf("diff-t%d", l)); err != nil {
			return err
		}
		if err := s.SettleCoordinator(0, "diff-tg"); err != nil {
			return err
		}
		txnFlow(s, l)
	}
	for _, id := range []string{"diff-t-timeout", "diff-t-none"} {
		if err := s.SettleCoordinator(1, id); err != nil {
			return err
		}
	}

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("diff-t-timeout"), 1_000_000_000
	s.Do("timeout-too-large", 4, ip)
	ip2 := kmsg.NewPtrInitProducerIDRequest()
	ip2.TransactionalID, ip2.TransactionTimeoutMillis = kmsg.StringPtr(""), 60000
	s.Do("empty-txn-id", 4, ip2)

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "diff-t-none", 12345, 0, true
	s.Do("unknown-txn-id", 4, end)

	lt := kmsg.NewPtrListTransactionsRequest()
	each(kmsg.ListTransactions, func(v int16) {
		s.Do("all", v, lt)
		f := kmsg.NewPtrListTransactionsRequest()
		f.StateFilters = []string{"CompleteCommit"}
		s.Do("state-filter", v, f)
		if v >= 1 {
			d := kmsg.NewPtrListTransactionsRequest()
			d.DurationFilterMillis = 1000000
			s.Do("duration-filter", v, d)
		}
		if v >= 2 {
			// KIP-1152: the pattern matches the whole id.
			for _, c := range []struct{ name, pattern string }{
				{"pattern", "diff-t[0-9]"},
				{"pattern-prefix", "diff-t"},
				{"pattern-empty", ""},
				{"pattern-invalid", "diff-t("},
			} {
				p := kmsg.NewPtrListTransactionsRequest()
				p.TransactionalIDPattern = kmsg.StringPtr(c.pattern)
				s.Do(c.name, v, p)
			}
		}
	})
	// WriteTxnMarkers is inter-broker, but samsa serves it on the client
	// listener as Kafka does: markers for partitions that do not exist.
	each(kmsg.WriteTxnMarkers, func(v int16) {
		wm := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 987654, 0, true, 0
		for _, tp := range []struct {
			topic string
			part  int32
		}{{"diff-nope", 0}, {topicA, 99}} {
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = tp.topic, []int32{tp.part}
			m.Topics = append(m.Topics, mt)
		}
		wm.Markers = append(wm.Markers, m)
		s.Do("unknown-partitions", v, wm)
	})
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"diff-t0", "diff-t-none"}
	each(kmsg.DescribeTransactions, func(v int16) { s.Do("", v, dt) })
	dp := kmsg.NewPtrDescribeProducersRequest()
	dpt := kmsg.NewDescribeProducersRequestTopic()
	dpt.Topic, dpt.Partitions = topicA, []int32{0, 1, 2, 99}
	dp.Topics = append(dp.Topics, dpt)
	dpu := kmsg.NewDescribeProducersRequestTopic()
	dpu.Topic, dpu.Partitions = "diff-nope", []int32{0}
	dp.Topics = append(dp.Topics, dpu)
	each(kmsg.DescribeProducers, func(v int16) { s.Do("", v, dp) })
	return nil
}

func txnFlow(s *Session, l int16) {
	txnID := fmt.Sprintf("diff-t%d", l)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType = 1
	fv := clamp(kmsg.FindCoordinator, max(l, 1))
	if fv >= 4 {
		fc.CoordinatorKeys = []string{txnID}
	} else {
		fc.CoordinatorKey = txnID
	}
	s.Do("txn", fv, fc)

	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr(txnID), 60000
	r, _ := s.Do("txn", clamp(kmsg.InitProducerID, l), ip).(*kmsg.InitProducerIDResponse)
	if r == nil || r.ErrorCode != 0 {
		return
	}
	pid, epoch := r.ProducerID, r.ProducerEpoch

	av := clamp(kmsg.AddPartitionsToTxn, l)
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	if av >= 4 {
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = txnID, pid, epoch, true
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = topicA, []int32{2}
		tx.Topics = append(tx.Topics, tt)
		add.Transactions = append(add.Transactions, tx)
		s.Do("verify-only", av, add)
		// A client adds partitions with v3 or lower.
		av = 3
		add = kmsg.NewPtrAddPartitionsToTxnRequest()
	}
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = txnID, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = topicA, []int32{2}
	add.Topics = append(add.Topics, at)
	s.Do("add", av, add)
	badEpoch := *add
	badEpoch.ProducerEpoch = epoch + 4
	s.Do("bad-epoch", av, &badEpoch)

	// A transactional batch for a partition outside the transaction:
	// INVALID_TXN_STATE to Produce v10 (librdkafka's newest),
	// TRANSACTION_ABORTABLE from v11 (docs/DURABILITY.md finding 14).
	for _, pv := range []int16{10, 11} {
		s.Do("not-added", pv, s.produceReq(pv, -1, kmsg.StringPtr(txnID), topicA, 1, s.batch(1, pid, epoch, 0, true)))
	}
	s.Do("txn", 11, s.produceReq(11, -1, kmsg.StringPtr(txnID), topicA, 2, s.batch(2, pid, epoch, 0, true)))

	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = txnID, pid, epoch, "diff-tg"
	s.Do("", clamp(kmsg.AddOffsetsToTxn, l), ao)

	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch = txnID, "diff-tg", pid, epoch
	toc.Generation = -1
	tv := clamp(kmsg.TxnOffsetCommit, l)
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = topicA
	if tv >= 6 {
		tt.Topic, tt.TopicID = "", s.TopicID(topicA) // v6 names topics by id
	}
	tt.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: int64(l + 1), LeaderEpoch: -1}}
	toc.Topics = append(toc.Topics, tt)
	s.Do("", tv, toc)
	// Partitions that do not exist are answered without being staged.
	for _, c := range []struct {
		name      string
		topic     string
		id        [16]byte
		partition int32
	}{
		{"unknown-topic", "diff-nope", [16]byte{1, 2, 3}, 0},
		{"bad-partition", topicA, s.TopicID(topicA), 99},
		{"zero-topic-id", "", [16]byte{}, 0},
	} {
		if c.name == "zero-topic-id" && tv < 6 {
			continue
		}
		bad := *toc
		bt := kmsg.NewTxnOffsetCommitRequestTopic()
		bt.Topic = c.topic
		if tv >= 6 {
			bt.Topic, bt.TopicID = "", c.id
		}
		bt.Partitions = []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: c.partition, Offset: 1, LeaderEpoch: -1}}
		bad.Topics = []kmsg.TxnOffsetCommitRequestTopic{bt}
		s.Do(c.name, tv, &bad)
	}
	if tv >= 5 {
		// A member's commit to a group that does not exist:
		// ILLEGAL_GENERATION, GROUP_ID_NOT_FOUND from v6 (v5+ adds the
		// group's partition to the transaction itself).
		none := *toc
		none.Group, none.Generation, none.MemberID = "diff-tg-none", 3, "diff-member"
		s.Do("member-of-no-group", tv, &none)
	}

	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, pid, epoch, true
	ev := clamp(kmsg.EndTxn, l)
	s.Do("commit", ev, end)
	// Kafka answers EndTxn before its markers are written; wait until
	// the transaction is complete so later offsets do not depend on it.
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{txnID}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r, err := s.Quiet(0, dt)
		if err != nil {
			return
		}
		if st := r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].State; st != "PrepareCommit" && st != "PrepareAbort" && st != "Ongoing" {
			break
		}
		<-time.After(50 * time.Millisecond)
	}
	stale := *end
	stale.ProducerEpoch = epoch - 1
	if epoch == 0 {
		stale.ProducerEpoch = epoch + 2
	}
	s.Do("wrong-epoch", ev, &stale)
}

// scriptAlterReplicaLogDirs: AlterReplicaLogDirs' answers on a broker
// with one log directory (learned from DescribeLogDirs, as the paths
// differ): the directory the replica is in already, one not in log.dirs,
// a relative path, an unknown topic and partition, a topic name too long
// for the future directory's name, a partition named twice.
func scriptAlterReplicaLogDirs(s *Session) {
	dir := "/diff-unknown-dir"
	if resp, err := s.Quiet(clamp(kmsg.DescribeLogDirs, 4), kmsg.NewPtrDescribeLogDirsRequest()); err == nil {
		if dirs := resp.(*kmsg.DescribeLogDirsResponse).Dirs; len(dirs) > 0 {
			dir = dirs[0].Dir
		}
	}
	each(kmsg.AlterReplicaLogDirs, func(v int16) {
		mk := func(dir, topic string, partitions ...int32) *kmsg.AlterReplicaLogDirsRequest {
			req := kmsg.NewPtrAlterReplicaLogDirsRequest()
			d := kmsg.NewAlterReplicaLogDirsRequestDir()
			d.Dir = dir
			t := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			t.Topic, t.Partitions = topic, partitions
			d.Topics = append(d.Topics, t)
			req.Dirs = append(req.Dirs, d)
			return req
		}
		s.Do("same-dir", v, mk(dir, topicDel, 0))
		s.Do("unknown-dir", v, mk("/diff-unknown-dir", topicDel, 0))
		s.Do("relative-dir", v, mk("data", topicDel, 0))
		s.Do("unknown-topic", v, mk(dir, "diff-nope", 0))
		s.Do("unknown-partition", v, mk(dir, topicDel, 99))
		s.Do("topic-too-long", v, mk(dir, strings.Repeat("x", 249), 0))
		s.Do("twice", v, mk(dir, topicDel, 0, 0))
	})
}

// scriptAdminTail: CreatePartitions, DescribeLogDirs, AlterReplicaLogDirs,
// DeleteTopics.
func scriptAdminTail(s *Session) error {
	// After the group sections, __consumer_offsets exists on both brokers.
	s.Do("internal-topic", 9, s.produceReq(9, -1, nil, "__consumer_offsets", 0, s.batch(1, -1, -1, -1, false)))
	each(kmsg.CreatePartitions, func(v int16) {
		mk := func(topic string, count int32, validate bool) *kmsg.CreatePartitionsRequest {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.TimeoutMillis, req.ValidateOnly = 30000, validate
			t := kmsg.NewCreatePartitionsRequestTopic()
			t.Topic, t.Count = topic, count
			req.Topics = append(req.Topics, t)
			return req
		}
		s.Do("grow", v, mk(topicCP, int32(v)+2, false))
		s.Do("same", v, mk(topicCP, int32(v)+2, false))
		s.Do("shrink", v, mk(topicCP, 1, false))
		s.Do("unknown-topic", v, mk("diff-nope", 3, false))
		s.Do("validate-only", v, mk(topicCP, 40, true))
	})
	each(kmsg.DescribeLogDirs, func(v int16) {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		t := kmsg.NewDescribeLogDirsRequestTopic()
		t.Topic, t.Partitions = topicDel, []int32{0}
		req.Topics = append(req.Topics, t)
		u := kmsg.NewDescribeLogDirsRequestTopic()
		u.Topic, u.Partitions = "diff-nope", []int32{0}
		req.Topics = append(req.Topics, u)
		s.Do("named", v, req)
	})
	scriptAlterReplicaLogDirs(s)
	each(kmsg.DeleteTopics, func(v int16) {
		name := fmt.Sprintf("diff-c%d", v)
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 30000
		if v >= 6 {
			req.Topics = []kmsg.DeleteTopicsRequestTopic{
				{TopicID: s.TopicID(name)},
				{Topic: kmsg.StringPtr("diff-nope")},
				{TopicID: [16]byte{1, 2, 3}},
			}
		} else {
			req.TopicNames = []string{name, "diff-nope"}
		}
		s.Do("", v, req)
	})
	return nil
}

// scriptWrongVersions sends versions outside what samsa advertises.
func scriptWrongVersions(s *Session) error {
	for _, c := range []struct {
		name string
		req  kmsg.Request
		v    int16
	}{
		{"below-min", metadataReq(0, false, topicA), -1},
		{"below-min", s.produceReq(2, -1, nil, topicA, 0, s.batch(1, -1, -1, -1, false)), 2},
		{"below-min", s.fetchReq(3, topicA, 0, 0, -1), 3},
		{"below-min", listOffsetsReq(topicA, 0, -1, -1), 0},
		{"above-max", kmsg.NewPtrApiVersionsRequest(), 99},
	} {
		v := c.v
		if v < 0 {
			continue
		}
		s.Do(c.name, v, c.req)
	}
	return nil
}
