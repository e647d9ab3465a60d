package handlers

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/broker/share"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
	sharestate "github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/storage"
)

// ShareFetch, key 78, versions 1-2 (KIP-932; v0 was Kafka 4.0's early
// access and is not served, as Kafka 4.1+).
//
//   - A share consumer fetches records of a share group from the
//     partitions' leaders; the leader acquires records for the member
//     (broker/share) and answers whole batches plus AcquiredRecords, the
//     offsets the member got with their delivery counts, and
//     AcquisitionLockTimeoutMillis (the group's
//     share.record.lock.duration.ms).
//   - Share sessions (ShareSessionEpoch): 0 opens one (acknowledgements are
//     INVALID_REQUEST), -1 closes it after the acknowledgements and
//     releases the member's records (no partition may be fetched),
//     otherwise the epoch must be the session's next one
//     (INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without a
//     session; SHARE_SESSION_LIMIT_REACHED past
//     group.share.max.share.sessions, answered after MaxWaitMs as Kafka
//     4.4 does). A session goes when the
//     connection that opened it closes, and its member's records are
//     released then (Kafka 4.4). Every partition named joins the
//     session (v1+ has no PartitionMaxBytes; max_bytes, capped at
//     fetch.max.bytes, limits the whole response); ForgottenTopicsData
//     leaves it.
//   - Piggybacked acknowledgements are applied and written before the
//     fetch (AcknowledgeErrorCode per partition).
//   - MaxRecords limits the acquired records across partitions; in
//     ShareAcquireMode 0 (batch-optimized, v1) it may be passed to end on
//     a batch boundary, in mode 1 (record-limit, v2) never. In mode 0
//     BatchSize splits AcquiredRecords at log batch boundaries into
//     ranges of at least BatchSize records (Kafka 4.4).
//   - A partition this node does not lead is NOT_LEADER_OR_FOLLOWER with
//     CurrentLeader and the leader's NodeEndpoints, as Fetch.
//   - The response of a session's first fetch names every partition; later
//     ones only those with records, an error or acknowledgement results.
//   - Long poll: with nothing acquired (or fewer than MinBytes) and
//     MaxWaitMs > 0 the fetch waits on its partitions' logs (a high
//     watermark move) and their share-partitions (records released or
//     whose locks expired), never by polling.
//   - Records are copied from the log (no sendfile for share fetches).
//   - Without a share manager (Deps.Shares nil) the request is answered
//     UNSUPPORTED_VERSION, as Kafka with share groups disabled.
func handleShareFetch(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	group, member, code := d.shareMember(req.GroupID, req.MemberID)
	if code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if req.IsRenewAck && renewFetchInvalid(req) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shareRequestTimeout)
	defer cancel()

	// v1+ has no PartitionMaxBytes: every partition named is fetched,
	// within max_bytes; a closing request fetches none.
	maxBytes := fetchMaxBytes(d.Config.FetchMaxBytes, req.MaxBytes)
	partMax := int32(max(maxBytes, 1))
	if req.ShareSessionEpoch == share.FinalEpoch {
		partMax = 0
	}
	var parts []share.FetchPartition
	hasAcks := false
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, share.FetchPartition{TopicPartition: share.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}, MaxBytes: partMax})
			hasAcks = hasAcks || len(p.AcknowledgementBatches) > 0
		}
	}
	var forgotten []share.TopicPartition
	for _, f := range req.ForgottenTopicsData {
		for _, p := range f.Partitions {
			forgotten = append(forgotten, share.TopicPartition{TopicID: f.TopicID, Partition: p})
		}
	}
	skey := share.SessionKey{Group: group, Member: member}
	sf := d.Shares.FetchSessionOn(share.ConnID(r.ConnID), skey, req.ShareSessionEpoch, parts, forgotten, hasAcks)
	if sf.Code == kerr.ShareSessionLimitReached.Code && req.MaxWaitMillis > 0 {
		// Kafka 4.4 answers a full session cache after MaxWaitMs, so
		// that a client retrying at once does not spin.
		r.Detach()
		waitStopping(d, time.Duration(req.MaxWaitMillis)*time.Millisecond)
	}
	if sf.Code != 0 {
		resp.ErrorCode = sf.Code
		return resp, nil
	}
	if req.ShareAcquireMode != share.AcquireBatchOptimized && req.ShareAcquireMode != share.AcquireRecordLimit {
		// Kafka 4.4 fails the whole fetch (ShareAcquireMode.forId
		// throws) once the session moved: UNKNOWN_SERVER_ERROR.
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	// Kafka 4.4 answers it in every response without a top-level error.
	resp.AcquisitionLockTimeoutMillis = int32(d.Shares.LockDuration(group) / time.Millisecond)

	img := d.Controller.Image()
	out := newShareFetchOut()
	// Acknowledgements first, each written before the answer; a
	// partition named twice has its last entry's only.
	lastEntry := lastFetchEntries(req.Topics)
	for ti, t := range req.Topics {
		for pi, p := range t.Partitions {
			tp := share.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}
			if len(p.AcknowledgementBatches) == 0 || lastEntry[tp] != [2]int{ti, pi} {
				continue
			}
			rp := out.partition(tp)
			st := d.shareTarget(r, img, group, tp)
			if st.code != 0 {
				rp.AcknowledgeErrorCode = st.code
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = st.leader, st.leaderEpoch
				continue
			}
			batches := make([]share.AckBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				batches[i] = share.AckBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, Types: b.AcknowledgeTypes}
			}
			ar := d.Shares.Acknowledge(ctx, st.target, share.Acknowledgement{Member: member, Renew: req.IsRenewAck, Batches: batches})
			rp.AcknowledgeErrorCode = ar.Code
			if ar.Message != "" {
				rp.AcknowledgeErrorMessage = &ar.Message
			}
		}
	}
	if sf.Final {
		d.Shares.CloseSession(ctx, skey)
		return out.response(d, r, img, resp), nil
	}
	if req.IsRenewAck {
		// A renew request only renews: it fetches nothing (KIP-1222).
		return out.response(d, r, img, resp), nil
	}

	// The fetch: every partition of the session, within max_bytes and
	// MaxRecords.
	minBytes := min(int(req.MinBytes), maxBytes)
	fr := &shareFetchRun{d: d, r: r, group: group, member: member, mode: req.ShareAcquireMode, batchSize: int(req.BatchSize), maxBytes: maxBytes, maxRecords: int(req.MaxRecords), out: out, parts: sf.Parts}
	if sf.Full {
		for _, p := range sf.Parts {
			out.partition(p.TopicPartition)
		}
	}
	fr.targets = make([]shareTarget, len(sf.Parts))
	anyError := false
	for i, p := range sf.Parts {
		fr.targets[i] = d.shareTarget(r, img, group, p.TopicPartition)
		anyError = anyError || fr.targets[i].code != 0
	}
	fr.run(ctx)
	if wait := time.Duration(req.MaxWaitMillis) * time.Millisecond; (fr.bytes == 0 || fr.bytes < minBytes) && wait > 0 && !anyError && !fr.failed && len(sf.Parts) > 0 && !fr.recordsDone() {
		waitStart := time.Now()
		r.Detach()
		fr.longPoll(ctx, wait, minBytes)
		r.Remote = time.Since(waitStart)
	}
	return out.response(d, r, img, resp), nil
}

// waitStopping waits for wait to pass, or for the broker to stop
// (d.Stopping).
func waitStopping(d *Deps, wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-d.Stopping:
	}
}

// shareRequestTimeout bounds a share request's persister calls.
const shareRequestTimeout = 30 * time.Second

// shareTarget is a share request's partition resolved on this node.
type shareTarget struct {
	target              share.Target
	code                int16
	leader, leaderEpoch int32
}

// shareTarget resolves a partition of a share request: UNKNOWN_TOPIC_ID,
// TOPIC_AUTHORIZATION_FAILED (READ on the topic),
// UNKNOWN_TOPIC_OR_PARTITION, or NOT_LEADER_OR_FOLLOWER with the leader
// this node knows.
func (d *Deps) shareTarget(r *Request, img *controller.Image, group string, tp share.TopicPartition) shareTarget {
	// CurrentLeader is {0, 0} except for NOT_LEADER_OR_FOLLOWER, as
	// Kafka 4.4 answers.
	var st shareTarget
	t := topicByID(img, tp.TopicID)
	if t == nil {
		st.code = kerr.UnknownTopicID.Code
		return st
	}
	if !d.authorized(r, kmsg.ACLOperationRead, acl.Topic(t.Name)) {
		st.code = kerr.TopicAuthorizationFailed.Code
		return st
	}
	ref := d.lookupPartition(img, t, tp.Partition)
	if ref.code != 0 {
		st.code = ref.code
		if ref.code == kerr.NotLeaderForPartition.Code {
			st.leader, st.leaderEpoch = ref.currentLeader()
		}
		return st
	}
	_, epoch := ref.replica.Leader()
	st.target = share.Target{Key: sharestate.Key{Group: group, TopicID: tp.TopicID, Partition: tp.Partition}, Log: ref.log, LeaderEpoch: epoch}
	return st
}

// shareFetchRun is the fetch part of one ShareFetch.
type shareFetchRun struct {
	d             *Deps
	r             *Request
	group, member string
	mode          int8
	batchSize     int
	maxBytes      int
	maxRecords    int // <= 0: no limit
	parts         []share.FetchPartition
	targets       []shareTarget
	out           *shareFetchOut
	bytes         int
	records       int
	// failed: a partition answered an error (the fetch answers at once).
	failed bool
}

// recordsDone reports whether MaxRecords is reached.
func (f *shareFetchRun) recordsDone() bool { return f.maxRecords > 0 && f.records >= f.maxRecords }

// run acquires from every partition once, adding to what earlier runs got.
func (f *shareFetchRun) run(ctx context.Context) {
	for i, p := range f.parts {
		st := f.targets[i]
		if st.code != 0 {
			rp := f.out.partition(p.TopicPartition)
			rp.ErrorCode = st.code
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = st.leader, st.leaderEpoch
			f.failed = true
			continue
		}
		if f.recordsDone() || (f.bytes >= f.maxBytes && f.bytes > 0) {
			continue
		}
		if rp := f.out.parts[p.TopicPartition]; rp != nil && len(rp.AcquiredRecords) > 0 {
			// Acquired by an earlier run of this fetch: a second
			// acquisition could repeat a batch in Records.
			continue
		}
		limit := min(int(p.MaxBytes), f.maxBytes-f.bytes)
		maxRecords := 0
		if f.maxRecords > 0 {
			maxRecords = f.maxRecords - f.records
		}
		res := f.d.Shares.Fetch(ctx, st.target, share.FetchRequest{Member: f.member, MaxBytes: limit, MaxRecords: maxRecords, Mode: f.mode, BatchSize: f.batchSize})
		if res.Code != 0 {
			f.out.partition(p.TopicPartition).ErrorCode = res.Code
			f.failed = true
			continue
		}
		if len(res.Acquired) == 0 {
			continue
		}
		rp := f.out.partition(p.TopicPartition)
		rp.Records = append(rp.Records, res.Records...)
		for _, a := range res.Acquired {
			rp.AcquiredRecords = append(rp.AcquiredRecords, kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, DeliveryCount: a.DeliveryCount})
		}
		f.bytes += len(res.Records)
		f.records += res.Count()
	}
}

// longPoll waits, at most wait, for records to acquire: a high watermark
// move of a partition's log, or records of a share-partition released or
// whose locks expired; then it acquires again, until it has minBytes (at
// least one record), an error, MaxRecords, or the broker stops.
func (f *shareFetchRun) longPoll(ctx context.Context, wait time.Duration, minBytes int) {
	w := storage.NewWaiter()
	avail := make(chan struct{}, 1)
	var logs []*storage.Log
	for i := range f.targets {
		st := &f.targets[i]
		if l, ok := st.target.Log.(*storage.Log); ok && l != nil {
			l.Watch(w, i, l.Changes())
			logs = append(logs, l)
		}
		defer f.d.Shares.Watch(st.target.Key, avail)()
	}
	defer func() {
		for _, l := range logs {
			l.Unwatch(w)
		}
	}()
	// A change between the first run and the watches above: run once.
	f.run(ctx)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for !(f.bytes > 0 && f.bytes >= minBytes) && !f.failed && !f.recordsDone() {
		select {
		case <-deadline.C:
			return
		case <-f.d.Stopping:
			return
		case <-w.C():
			w.Fired(nil)
		case <-avail:
		}
		// Leadership may have moved: resolve the partitions again.
		img := f.d.Controller.Image()
		for i, p := range f.parts {
			if st := f.d.shareTarget(f.r, img, f.group, p.TopicPartition); st.code != 0 || st.target.Log != f.targets[i].target.Log {
				f.targets[i] = st
			}
		}
		f.run(ctx)
	}
}

// shareFetchOut collects a ShareFetch's partitions in request order.
type shareFetchOut struct {
	order []share.TopicPartition
	parts map[share.TopicPartition]*kmsg.ShareFetchResponseTopicPartition
}

func newShareFetchOut() *shareFetchOut {
	return &shareFetchOut{parts: map[share.TopicPartition]*kmsg.ShareFetchResponseTopicPartition{}}
}

// partition returns the response partition of tp, adding it.
func (o *shareFetchOut) partition(tp share.TopicPartition) *kmsg.ShareFetchResponseTopicPartition {
	if p := o.parts[tp]; p != nil {
		return p
	}
	p := kmsg.NewShareFetchResponseTopicPartition()
	p.Partition = tp.Partition
	o.parts[tp] = &p
	o.order = append(o.order, tp)
	return &p
}

// response builds the response: partitions grouped by topic in the order
// they were added, and the endpoints of the leaders named in the
// CurrentLeader of NOT_LEADER_OR_FOLLOWER partitions. As Kafka 4.4, a
// partition without records has Records empty (kmsg decodes it as null)
// and no AcquiredRecords, and CurrentLeader is {0, 0} unless the
// partition is not led here.
func (o *shareFetchOut) response(d *Deps, r *Request, img *controller.Image, resp *kmsg.ShareFetchResponse) *kmsg.ShareFetchResponse {
	var leaders []int32
	for _, tp := range o.order {
		p := o.parts[tp]
		if p.Records == nil {
			// Empty, never null: the Java client refuses a null
			// record set ("non-nullable field records was
			// serialized as null"); Kafka sends empty.
			p.Records = []byte{}
		}
		if p.ErrorCode == kerr.NotLeaderForPartition.Code && p.CurrentLeader.LeaderID >= 0 && !slices.Contains(leaders, p.CurrentLeader.LeaderID) {
			leaders = append(leaders, p.CurrentLeader.LeaderID)
		}
		var cur *kmsg.ShareFetchResponseTopic
		for i := range resp.Topics {
			if resp.Topics[i].TopicID == tp.TopicID {
				cur = &resp.Topics[i]
			}
		}
		if cur == nil {
			resp.Topics = append(resp.Topics, kmsg.NewShareFetchResponseTopic())
			cur = &resp.Topics[len(resp.Topics)-1]
			cur.TopicID = tp.TopicID
		}
		cur.Partitions = append(cur.Partitions, *p)
	}
	for _, id := range leaders {
		if b, host, port, ok := leaderEndpoint(img, id, r.ListenerName); ok {
			e := kmsg.NewShareFetchResponseNodeEndpoint()
			e.NodeID, e.Rack = b.ID, b.Rack
			e.Host, e.Port = host, port
			resp.NodeEndpoints = append(resp.NodeEndpoints, e)
		}
	}
	return resp
}

// shareMember is the group and member id of a ShareFetch or
// ShareAcknowledge, or the request's error code: UNSUPPORTED_VERSION
// without a share manager, INVALID_REQUEST without a group or member id.
func (d *Deps) shareMember(groupID, memberID *string) (group, member string, code int16) {
	if d.Shares == nil || !shareGroupsOn(d) {
		return "", "", kerr.UnsupportedVersion.Code
	}
	group, member = shareString(groupID), shareString(memberID)
	if group == "" || member == "" {
		return "", "", kerr.InvalidRequest.Code
	}
	return group, member, 0
}

// shareString is s, or "" for null.
func shareString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// renewFetchInvalid reports whether a ShareFetch with IsRenewAck asks for
// records, which KIP-1222 forbids: Kafka 4.4 answers INVALID_REQUEST
// (before the share session moves) unless MaxBytes, MinBytes, MaxRecords
// and MaxWaitMillis are all 0.
func renewFetchInvalid(req *kmsg.ShareFetchRequest) bool {
	return req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0
}
