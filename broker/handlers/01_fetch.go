package handlers

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/storage"
)

// Fetch, key 1, versions 4-18.
//
//   - v4 adds isolation_level, last_stable_offset and aborted_transactions:
//     read_uncommitted (0) reads up to the high watermark; read_committed
//     (1) up to the last stable offset (the first offset of the oldest open
//     transaction, or the high watermark), and the partition answers the
//     aborted transactions (producer id, first offset) overlapping the
//     returned batches, so the client drops their records; control
//     batches are returned and skipped by clients. v5 log_start_offset; v7 KIP-227 sessions (see
//     fetch_session.go); v9 current_leader_epoch (FENCED_LEADER_EPOCH /
//     UNKNOWN_LEADER_EPOCH); v11 rack and preferred_read_replica (KIP-392,
//     fetch_replica.go: followers serve v11+ consumer fetches up to their
//     high watermark; replica.selector.class redirects from the leader);
//     v12 flexible, last_fetched_epoch; v13 topics by id (UNKNOWN_TOPIC_ID);
//     v15 replica_state; v16-v18 tagged fields only.
//   - A fetch with replica_id >= 0 (ReplicaState.ID from v15) is a
//     follower's: replica.Manager.ServeReplicaFetch serves it up to the
//     log end offset, records the follower's position (which moves the
//     high watermark and the ISR) and reports divergence (v12+
//     DivergingEpoch); follower fetches are sessionless.
//   - A partition this node does not lead (v4-v10) or hold a replica of
//     (v11+) is NOT_LEADER_OR_FOLLOWER, with
//     CurrentLeader (v12+, KIP-951) and the leader's endpoint on the
//     request's listener in NodeEndpoints (v16+).
//   - Consumers read up to the high watermark. An offset below the log
//     start offset or above the log end offset is OFFSET_OUT_OF_RANGE.
//   - Sizes: max_bytes is capped at fetch.max.bytes (55 MiB by default)
//     for consumers and followers, and min_bytes at that max_bytes, as
//     Kafka; each partition gets min(partition_max_bytes, what is left of
//     max_bytes); the first batch of the first partition that has data is
//     returned whole even when larger than both limits, so a consumer can
//     always make progress. A partition whose next batch does not fit
//     whole (and starts below what the consumer may read) is filled to
//     its limit with the start of that batch, as Kafka's segment read
//     does; clients drop the partial batch. Responses so keep one size,
//     which lets clients reuse their response buffers (issue 15).
//   - Long poll: when fewer than min_bytes are ready and max_wait_ms > 0, we
//     wait on the partitions' append notifications (never a sleep loop)
//     until min_bytes are there, max_wait passes, or the broker stops.
func handleFetch(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.FetchRequest)
	v := r.Header.APIVersion
	if req.Version = v; replica.FetchReplicaID(req) >= 0 {
		// A follower: served by the replica layer, up to the log end
		// (fetch_replica_files.go).
		return d.serveFollowerFetch(r, req), nil
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	now := d.Now()

	// Resolve the session and the list of partitions to read (fetch_session.go).
	fc, code := d.fetchSessions.newFetchContext(req, v, now)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	defer fc.done()
	resp.SessionID = fc.sessionID()
	wants, wantParts := fc.wants, fc.parts
	img := d.Controller.Image()

	// fetch.max.bytes caps max_bytes for every fetch, consumers' and
	// followers' alike, and min_bytes is at most the result, as Kafka. A
	// max_bytes of 2^31-1 used to return every byte up to the high
	// watermark in one response (190 MB).
	maxBytes := fetchMaxBytes(d.Config.FetchMaxBytes, req.MaxBytes)
	minBytes := min(int(req.MinBytes), maxBytes)
	results := make([]fetchResult, len(wants))
	// Slices left pinned (a long poll's earlier reads, partitions the
	// session leaves out, a panic) are released here; those that go into
	// a FileFetch are the connection's to release.
	defer func() {
		for i := range results {
			results[i].file.Release()
		}
	}()
	// A consumer needs READ on each topic, checked on every fetch for
	// every partition it reads, those of its session included (authz.go).
	denied := d.fetchDenied(r, img, wants)
	readCommitted := req.IsolationLevel == 1
	client := newFetchClient(req, v) // KIP-392: fetch_replica.go
	total, anyError := 0, false
	for i, k := range wants {
		if denied != nil && denied[i] {
			results[i] = fetchResult{code: kerr.TopicAuthorizationFailed.Code, highWatermark: -1, lastStable: -1, logStart: -1, leader: -1, leaderEpoch: -1}
			anyError = true
			continue
		}
		res := d.readPartition(img, k, wantParts[k], partitionRead{remaining: maxBytes - total, first: total == 0, readCommitted: readCommitted, client: client})
		results[i] = res
		total += res.size()
		anyError = anyError || res.code != 0 || res.redirect // both answer at once
	}
	if wait := time.Duration(req.MaxWaitMillis) * time.Millisecond; total < minBytes && wait > 0 && !anyError && len(wants) > 0 {
		waitStart := time.Now()
		defer func() { r.Remote = time.Since(waitStart) }()
		// Later requests of the connection need not wait for this one.
		r.Detach()
		d.longPoll(results, wait, func(i int) (done bool) {
			// Only partition i changed: what it has read so far is
			// extended by what was appended since, within what the
			// others leave of max_bytes. A partition that now fails
			// (leadership moved, log deleted) answers at once, as does
			// one whose new batches are in a newer segment than those
			// it holds (one response carries one range per partition):
			// both as Kafka's DelayedFetch.
			prev := results[i]
			total -= prev.size()
			img = d.Controller.Image()
			res := d.readPartition(img, wants[i], wantParts[wants[i]], partitionRead{remaining: maxBytes - total, first: total == 0, readCommitted: readCommitted, client: client, prev: &prev})
			results[i] = res
			total += res.size()
			return total >= minBytes || res.code != 0 || res.rolled || res.redirect
		})
	}

	// Build the response, topics grouped in request/session order.
	// A partition whose range stopped at its limit before a batch that
	// did not fit is filled up to the limit with the start of that batch,
	// within what max_bytes leaves, as Kafka does (storage.Log.PadSlice).
	var slack int64
	for i := range results {
		slack += int64(results[i].size())
	}
	slack = int64(maxBytes) - slack
	leaders := map[int32]bool{}
	var files []PartitionFile
	var cur *kmsg.FetchResponseTopic
	for i, k := range wants {
		res := results[i]
		if !fc.respond(k, &res) {
			continue
		}
		if cur == nil || cur.Topic != k.topic || cur.TopicID != k.topicID {
			resp.Topics = append(resp.Topics, kmsg.NewFetchResponseTopic())
			cur = &resp.Topics[len(resp.Topics)-1]
			cur.Topic = k.topic
			cur.TopicID = k.topicID
		}
		p := kmsg.NewFetchResponseTopicPartition()
		p.Partition = k.partition
		p.ErrorCode = res.code
		p.HighWatermark = res.highWatermark
		p.LastStableOffset = res.lastStable
		p.LogStartOffset = res.logStart
		p.AbortedTransactions = res.aborted
		if res.redirect {
			p.PreferredReadReplica = res.readReplica
		}
		if res.leader >= 0 || res.leaderEpoch >= 0 {
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = res.leader, res.leaderEpoch
			if v >= 16 {
				leaders[res.leader] = true
			}
		}
		// Empty, never null: librdkafka rejects a null record set
		// ("invalid MessageSetSize -1") and Kafka always sends empty.
		if res.file.Length > 0 && res.log != nil && slack > 0 {
			slack -= res.log.PadSlice(&res.file, min(res.partMax, res.file.Length+slack), res.upTo)
		}
		if res.file.Length > 0 && !r.SendFiles {
			// A caller that cannot send files (in-process callers) gets
			// the same bytes copied.
			b, err := res.file.Bytes()
			res.file.Release()
			res.file, results[i].file = storage.FileSlice{}, storage.FileSlice{}
			if err != nil {
				d.Logger.Error("fetch read failed", "topic", k.topic, "partition", k.partition, "err", err)
				p.ErrorCode, p.HighWatermark, p.LastStableOffset, p.LogStartOffset = kerr.KafkaStorageError.Code, -1, -1, -1
				p.AbortedTransactions = nil
			}
			res.records = b
		}
		p.RecordBatches = res.records
		if p.RecordBatches == nil {
			p.RecordBatches = []byte{}
		}
		if res.file.Length > 0 {
			// The connection now owns the slice (FileFetch.Release).
			files = append(files, PartitionFile{Topic: len(resp.Topics) - 1, Partition: len(cur.Partitions), Slice: res.file})
			results[i].file = storage.FileSlice{}
		}
		cur.Partitions = append(cur.Partitions, p)
	}
	// v16+: the endpoints of the leaders named in CurrentLeader (KIP-951),
	// on the listener the fetch came in on (leaderEndpoint).
	for id := range leaders {
		if b, host, port, ok := leaderEndpoint(img, id, r.ListenerName); ok {
			fb := kmsg.NewFetchResponseBroker()
			fb.NodeID, fb.Host, fb.Port, fb.Rack = b.ID, host, port, b.Rack
			resp.Brokers = append(resp.Brokers, fb)
		}
	}
	if len(files) > 0 {
		return &FileFetch{FetchResponse: resp, Files: files}, nil
	}
	return resp, nil
}

// longPoll waits, for at most wait, until a partition of results changes
// (a high watermark move, a truncation; an append alone is not one, as a
// consumer reads up to the high watermark: storage.Waiter) and then calls reread
// with its index, which says whether the fetch is done; it returns when
// reread says so, when wait passes or when the broker stops. It watches
// each partition with one storage.Waiter, so a change costs only the
// fetches that read its partition, and a wake-up rereads only the
// partitions that changed.
func (d *Deps) longPoll(results []fetchResult, wait time.Duration, reread func(i int) (done bool)) {
	w := storage.NewWaiter()
	watched := make([]*storage.Log, len(results))
	for i := range results {
		if l := results[i].log; l != nil {
			l.Watch(w, i, results[i].since)
			watched[i] = l
		}
	}
	defer func() {
		for _, l := range watched {
			if l != nil {
				l.Unwatch(w)
			}
		}
	}()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var fired []int
	for {
		select {
		case <-deadline.C:
			return
		case <-d.Stopping:
			return
		case <-w.C():
		}
		fired = w.Fired(fired[:0])
		for _, i := range fired {
			if reread(i) {
				return
			}
			if l := results[i].log; l != watched[i] {
				// Another log now serves the partition.
				if watched[i] != nil {
					watched[i].Unwatch(w)
				}
				if watched[i] = l; l != nil {
					l.Watch(w, i, results[i].since)
				}
			}
		}
	}
}

// defaultFetchMaxBytes is Kafka's fetch.max.bytes default (55 MiB), for a
// Config built without it.
const defaultFetchMaxBytes = 57671680

// fetchMaxBytes is the byte limit of one fetch: the request's max_bytes,
// at most fetch.max.bytes (configured; its default when 0). A max_bytes of
// 0 or less gets no records beyond the first batch (KIP-74's progress
// rule), as in Kafka.
func fetchMaxBytes(configured, requested int32) int {
	if configured <= 0 {
		configured = defaultFetchMaxBytes
	}
	return int(max(min(requested, configured), 0))
}

type fetchResult struct {
	code          int16
	highWatermark int64
	lastStable    int64
	logStart      int64
	// file is the pinned range read; records its bytes, copied when the
	// response is built for a caller that cannot send files
	// (Request.SendFiles unset).
	records []byte
	file    storage.FileSlice
	aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction
	// log and since are what a long poll watches: the partition's log
	// and its change count taken before the read (nil: nothing to watch).
	log   *storage.Log
	since uint64
	// leader and leaderEpoch are KIP-951's CurrentLeader (v12+) for
	// NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH; -1 otherwise.
	leader, leaderEpoch int32
	// rolled: a long poll's later batches are in a newer segment than
	// the range file holds, so the fetch should answer now.
	rolled bool
	// redirect: the leader sends the consumer to readReplica, its
	// PreferredReadReplica (KIP-392, fetch_replica.go).
	redirect    bool
	readReplica int32
	// partMax and upTo are the partition's own limit (partition_max_bytes)
	// and the offset it was read up to, for padding its range
	// (storage.Log.PadSlice).
	partMax, upTo int64
}

// partitionRead is how readPartition reads one partition of a fetch.
type partitionRead struct {
	// remaining is what is left of the fetch's max_bytes for this
	// partition; first is set while no partition before it returned
	// data (its first batch then comes whole, whatever its size).
	remaining int
	first     bool
	// readCommitted reads up to the last stable offset instead of the
	// high watermark.
	readCommitted bool
	// client is the consumer's rack and whether a follower may serve it.
	client fetchClient
	// prev is what a long poll read of the partition before it changed:
	// readPartition takes it over (releases or extends its range).
	prev *fetchResult
}

// size is the number of record bytes the result carries.
func (r *fetchResult) size() int {
	return len(r.records) + int(r.file.Length)
}

func (d *Deps) readPartition(img *controller.Image, k sessionKey, sp *sessionPartition, pr partitionRead) fetchResult {
	remaining, first, readCommitted := pr.remaining, pr.first, pr.readCommitted
	var prev storage.FileSlice
	if pr.prev != nil {
		prev = pr.prev.file
		if pr.prev.log == nil || pr.prev.size() != int(prev.Length) {
			// Records read into memory (no file range): read again.
			prev.Release()
			prev = storage.FileSlice{}
		}
	}
	// prev is released on every return that does not keep it.
	defer func() { prev.Release() }()
	res := fetchResult{highWatermark: -1, lastStable: -1, logStart: -1, leader: -1, leaderEpoch: -1}
	var t *controller.Topic
	if !k.byID {
		t = topicByName(img, k.topic)
	} else {
		t = topicByID(img, k.topicID)
		if t == nil {
			res.code = kerr.UnknownTopicID.Code
			return res
		}
	}
	ref, preferred := d.lookupFetchPartition(img, t, k.partition, sp, pr.client)
	if ref.code != 0 {
		res.code = ref.code
		if ref.code == kerr.NotLeaderForPartition.Code || ref.code == kerr.FencedLeaderEpoch.Code {
			res.leader, res.leaderEpoch = ref.currentLeader()
		}
		return res
	}
	l := ref.log
	if preferred >= 0 {
		return redirectResult(l, preferred)
	}
	res.log, res.since = l, l.Changes()
	if pr.prev != nil && pr.prev.log != l {
		prev.Release() // another log serves the partition now
	}
	hw := l.HighWatermark()
	lso := min(l.LastStableOffset(), hw)
	res.highWatermark, res.lastStable, res.logStart = hw, lso, l.LogStartOffset()
	upTo := hw
	if readCommitted {
		upTo = lso
	}
	limit := int(sp.maxBytes)
	if remaining < limit {
		limit = remaining
	}
	res.partMax, res.upTo = int64(sp.maxBytes), upTo
	var file storage.FileSlice
	var err error
	if prev.Length > 0 {
		// A long poll's partition that changed: read on from where
		// the range read before ends. A failure to (the log was
		// truncated under it) reads the partition again below.
		next, nextErr := l.ReadSlice(prev.LastOffset+1, limit-int(prev.Length), upTo, false)
		if nextErr == nil {
			file, prev = prev, storage.FileSlice{}
			if next.Length > 0 && !file.Extend(&next) {
				res.rolled = true
			}
		}
		next.Release()
		prev.Release()
	}
	if limit <= 0 && !first && file.Length == 0 {
		return res
	}
	if file.Length == 0 {
		file, err = l.ReadSlice(sp.fetchOffset, limit, upTo, first)
		if file.Length == 0 {
			file.Release()
			file = storage.FileSlice{}
		}
	}
	if err != nil {
		// Kafka answers a failed read with every offset unknown (-1),
		// OFFSET_OUT_OF_RANGE included (compat-tests/diff).
		res.highWatermark, res.lastStable, res.logStart = -1, -1, -1
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			res.code = kerr.OffsetOutOfRange.Code
		} else if code := d.closedLogCode(err, t, k.partition, k.byID); code != 0 {
			res.code = code // deleted under the read (closed_log.go)
		} else if errors.Is(err, storage.ErrCorrupt) {
			// Damaged data on disk (logged once by storage): Kafka's
			// read fails with CorruptRecordException, CORRUPT_MESSAGE.
			// Reads of the intact batches before it still succeed.
			res.code = kerr.CorruptMessage.Code
		} else {
			d.Logger.Error("fetch read failed", "topic", t.Name, "partition", k.partition, "err", err)
			res.code = kerr.KafkaStorageError.Code
		}
		return res
	}
	res.file = file
	if !readCommitted || file.Length == 0 {
		return res
	}
	for _, a := range l.AbortedTransactions(sp.fetchOffset, file.LastOffset+1) {
		res.aborted = append(res.aborted, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset})
	}
	return res
}
