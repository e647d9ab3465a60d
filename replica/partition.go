package replica

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// Errors returned by Partition methods.
var (
	// ErrStaleEpoch is returned for follower work (appends, truncation)
	// meant for a leader epoch the partition has left.
	ErrStaleEpoch = errors.New("replica: stale leader epoch")
)

// Role is what this node is for a partition.
type Role int8

// Roles.
const (
	RoleNone Role = iota
	RoleLeader
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return "none"
}

// Partition is one hosted partition (Kafka's Partition): its log, this
// node's role, the epochs and ISR from the image, what the leader knows of
// each follower, and every change of the high watermark, which is made by
// setHighWatermarkLocked only.
//
// Locks: roleMu is held for reading across every write to the log (leader
// appends, follower appends and truncations) and for writing across role
// changes, as Kafka's leaderIsrUpdateLock, so that no append of an old
// role lands after a new one started; it is held across log IO by design.
// mu guards the fields below and is never held across log IO other than
// the high watermark update (memory only). Order: roleMu, then mu, then the
// log's own locks.
type Partition struct {
	tp      storage.TopicPartition
	topicID controller.Uuid
	log     *storage.Log
	m       *Manager

	roleMu sync.RWMutex
	mu     struct {
		sync.Mutex
		role           Role
		leader         int32
		leaderEpoch    int32
		partitionEpoch int32
		replicas       []int32
		isr            []int32
		// pendingISR is the ISR proposed by an AlterPartition in flight,
		// nil when none is.
		pendingISR []int32
		followers  map[int32]FollowerState
		// epochStartOffset is the log end offset when this node became
		// leader of leaderEpoch.
		epochStartOffset int64
		minISR           int
		// changed is closed at every change of role, epochs or ISR.
		changed chan struct{}
	}
}

func newPartition(m *Manager, tp storage.TopicPartition, topicID controller.Uuid, l *storage.Log) *Partition {
	p := &Partition{tp: tp, topicID: topicID, log: l, m: m}
	p.mu.leader = -1
	p.mu.leaderEpoch = -1
	p.mu.partitionEpoch = -1
	p.mu.changed = make(chan struct{})
	return p
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() storage.TopicPartition { return p.tp }

// Log returns the partition's log. Readers may use it freely; writes go
// through the Partition.
func (p *Partition) Log() *storage.Log { return p.log }

// State is a copy of the partition's replication state.
type State struct {
	Role           Role
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	PendingISR     []int32
	MinISR         int
	HighWatermark  int64
}

// State returns a copy of the replication state.
func (p *Partition) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return State{Role: p.mu.role, Leader: p.mu.leader, LeaderEpoch: p.mu.leaderEpoch, PartitionEpoch: p.mu.partitionEpoch,
		Replicas: slices.Clone(p.mu.replicas), ISR: slices.Clone(p.mu.isr), PendingISR: slices.Clone(p.mu.pendingISR),
		MinISR: p.mu.minISR, HighWatermark: p.log.HighWatermark()}
}

// notifyLocked wakes the waiters on changed.
// REQUIRES: p.mu held.
func (p *Partition) notifyLocked() {
	close(p.mu.changed)
	p.mu.changed = make(chan struct{})
}

// apply moves the partition to the state the image gives it. Images with
// an older leader epoch, or the same epochs, change nothing. It returns
// the role after the call.
func (p *Partition) apply(cp controller.Partition, minISR int) (Role, error) {
	local := p.m.opts.NodeID
	p.mu.Lock()
	stale := cp.LeaderEpoch < p.mu.leaderEpoch ||
		(cp.LeaderEpoch == p.mu.leaderEpoch && cp.PartitionEpoch <= p.mu.partitionEpoch && minISR == p.mu.minISR)
	role := p.mu.role
	p.mu.Unlock()
	if stale && role != RoleNone {
		return role, nil
	}
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	newEpoch := cp.LeaderEpoch != p.mu.leaderEpoch || p.mu.role == RoleNone
	p.mu.Unlock()
	if cp.Leader == local && newEpoch {
		// The new leader's epoch starts at its log end (Kafka's
		// makeLeader): followers truncate to it.
		leo := p.log.LogEndOffset()
		if err := p.log.AssignEpochStartOffset(cp.LeaderEpoch, leo); err != nil {
			return role, err
		}
		// Kafka logs each leadership it takes the same way; the
		// restart tests read these lines.
		p.m.logger.Info("becoming leader", "topic", p.tp.Topic, "partition", p.tp.Partition,
			"leader_epoch", cp.LeaderEpoch, "start_offset", leo, "partition_epoch", cp.PartitionEpoch, "isr", cp.ISR)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cp.PartitionEpoch > p.mu.partitionEpoch || newEpoch {
		// A newer partition epoch settles any ISR change in flight:
		// it was committed or superseded.
		if !newEpoch && cp.Leader == local && p.mu.pendingISR != nil && slices.Equal(cp.ISR, p.mu.pendingISR) {
			p.countISRChangeLocked(cp.ISR) // committed; the image saw it before the answer
		}
		p.mu.pendingISR = nil
	}
	p.mu.leader = cp.Leader
	p.mu.leaderEpoch = cp.LeaderEpoch
	p.mu.partitionEpoch = cp.PartitionEpoch
	p.mu.replicas = slices.Clone(cp.Replicas)
	p.mu.isr = slices.Clone(cp.ISR)
	p.mu.minISR = minISR
	if cp.Leader == local {
		if newEpoch || p.mu.role != RoleLeader {
			now := p.m.now()
			p.mu.epochStartOffset = p.log.LogEndOffset()
			p.mu.followers = map[int32]FollowerState{}
			for _, r := range cp.Replicas {
				if r == local {
					continue
				}
				f := FollowerState{LogEndOffset: -1, LastFetchLeaderLEO: -1}
				if slices.Contains(cp.ISR, r) {
					// In-sync followers get a full lag period to
					// fetch from the new leader.
					f.LastCaughtUp = now
				}
				p.mu.followers[r] = f
			}
		} else {
			// The same leader epoch with other replicas (a reassignment):
			// a replica that joined gets a follower state, one that left
			// loses it.
			for _, r := range cp.Replicas {
				if _, ok := p.mu.followers[r]; !ok && r != local {
					p.mu.followers[r] = FollowerState{LogEndOffset: -1, LastFetchLeaderLEO: -1}
				}
			}
			for r := range p.mu.followers {
				if !slices.Contains(cp.Replicas, r) {
					delete(p.mu.followers, r)
				}
			}
		}
		p.mu.role = RoleLeader
		p.maybeIncrementHighWatermarkLocked()
	} else {
		p.mu.role = RoleFollower
		p.mu.followers = nil
	}
	p.notifyLocked()
	return p.mu.role, nil
}

// stop makes the partition hosted by no role (it left the replicas or
// its topic was deleted); waiters wake and fail.
func (p *Partition) stop() {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.role = RoleNone
	p.mu.leader = -1
	p.mu.followers = nil
	p.mu.pendingISR = nil
	p.notifyLocked()
}

// CheckLeader answers whether a client request with clientEpoch as its
// current leader epoch (-1: none) may be served by this node as leader,
// with Kafka's codes: NOT_LEADER_OR_FOLLOWER when this node does not lead
// the partition, FENCED_LEADER_EPOCH for an older epoch and
// UNKNOWN_LEADER_EPOCH for a newer one.
func (p *Partition) CheckLeader(clientEpoch int32) int16 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkLeaderLocked(clientEpoch)
}

// REQUIRES: p.mu held.
func (p *Partition) checkLeaderLocked(clientEpoch int32) int16 {
	switch {
	case clientEpoch >= 0 && clientEpoch < p.mu.leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	case clientEpoch > p.mu.leaderEpoch:
		return kerr.UnknownLeaderEpoch.Code
	case p.mu.role != RoleLeader:
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// Leader returns the leader and leader epoch this node knows, for
// KIP-951's CurrentLeader.
func (p *Partition) Leader() (leader, epoch int32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.leader, p.mu.leaderEpoch
}

// HighWatermark returns the high watermark.
func (p *Partition) HighWatermark() int64 { return p.log.HighWatermark() }

// setHighWatermarkLocked is the one place the high watermark changes.
// REQUIRES: p.mu held.
func (p *Partition) setHighWatermarkLocked(hw int64) {
	p.log.SetHighWatermark(hw)
}

// maybeIncrementHighWatermarkLocked is Kafka's maybeIncrementLeaderHW:
// the high watermark moves up to the minimum log end offset over the
// maximal ISR.
// REQUIRES: p.mu held, role leader.
func (p *Partition) maybeIncrementHighWatermarkLocked() {
	if UnderMinISR(len(p.mu.isr), len(p.mu.replicas), p.mu.minISR) {
		return
	}
	isr := p.mu.isr
	if len(p.mu.pendingISR) > 0 {
		isr = MaximalISR(p.mu.isr, p.mu.pendingISR)
	}
	cur := p.log.HighWatermark()
	hw := HighWatermark(cur, p.m.opts.NodeID, p.log.LogEndOffset(), isr, p.mu.followers)
	if hw > cur {
		p.setHighWatermarkLocked(hw)
	}
}

// effectiveMinISRLocked is min.insync.replicas capped at the number of
// replicas, Kafka's effectiveMinIsr: a topic whose min.insync.replicas
// exceeds its replication factor (2 on a topic of one replica) takes
// acks=all writes once every replica has them, as Kafka 4.4 does, rather
// than refusing them all with NOT_ENOUGH_REPLICAS.
// REQUIRES: p.mu held.
func (p *Partition) effectiveMinISRLocked() int {
	return min(p.mu.minISR, len(p.mu.replicas)) // as UnderMinISR
}

// AppendFunc appends to the leader's log; leaderEpoch is the epoch to
// stamp on the batches.
type AppendFunc func(l *storage.Log, leaderEpoch int32) (storage.AppendInfo, error)

// AppendAsLeader runs fn, which appends to the log, if this node leads the
// partition, then advances the high watermark (at once when the ISR is
// this node alone). With requiredAcks -1, an ISR smaller than
// min.insync.replicas refuses the append with NOT_ENOUGH_REPLICAS, as
// Kafka's appendRecordsToLeader. It returns the leader epoch the append
// was made in, for WaitForHighWatermark. code is a Kafka error code; err
// is fn's error.
func (p *Partition) AppendAsLeader(requiredAcks int16, fn AppendFunc) (info storage.AppendInfo, leaderEpoch int32, code int16, err error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	p.mu.Lock()
	if code := p.checkLeaderLocked(-1); code != 0 {
		p.mu.Unlock()
		return info, -1, code, nil
	}
	epoch := p.mu.leaderEpoch
	if requiredAcks == -1 && len(p.mu.isr) < p.effectiveMinISRLocked() {
		p.mu.Unlock()
		return info, epoch, kerr.NotEnoughReplicas.Code, nil
	}
	p.mu.Unlock()
	info, err = fn(p.log, epoch)
	if err != nil {
		return info, epoch, 0, err
	}
	p.mu.Lock()
	p.maybeIncrementHighWatermarkLocked()
	p.mu.Unlock()
	return info, epoch, 0, nil
}

// WaitForHighWatermark parks an acks=-1 produce (Kafka's DelayedProduce)
// until the high watermark reaches offset (the last offset of the batch
// plus one), woken by the log's notification and the partition's state
// changes, never by polling. Once reached it answers
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
// min.insync.replicas meanwhile, else 0; NOT_LEADER_OR_FOLLOWER if this
// node stopped leading leaderEpoch; REQUEST_TIMED_OUT when ctx ends.
func (p *Partition) WaitForHighWatermark(ctx context.Context, leaderEpoch int32, offset int64) int16 {
	for {
		logCh := p.log.Wait()
		p.mu.Lock()
		stateCh := p.mu.changed
		if p.mu.role != RoleLeader || p.mu.leaderEpoch != leaderEpoch {
			p.mu.Unlock()
			return kerr.NotLeaderForPartition.Code
		}
		if p.log.HighWatermark() >= offset {
			short := len(p.mu.isr) < p.effectiveMinISRLocked()
			p.mu.Unlock()
			if short {
				return kerr.NotEnoughReplicasAfterAppend.Code
			}
			return 0
		}
		p.mu.Unlock()
		select {
		case <-logCh:
		case <-stateCh:
		case <-p.m.stopping:
			return kerr.NotLeaderForPartition.Code
		case <-ctx.Done():
			return kerr.RequestTimedOut.Code
		}
	}
}

// FollowerFetchResult is the leader's side of a follower's fetch.
type FollowerFetchResult struct {
	// Diverged is set when the follower's log diverges (Fetch v12+):
	// DivergingEpoch and DivergingEndOffset go into the response and no
	// records are returned.
	Diverged           bool
	DivergingEpoch     int32
	DivergingEndOffset int64
	// HighWatermark is the leader's high watermark after the fetch, and
	// NewHighWatermark reports that the follower was not sent it yet: the
	// fetch should answer at once rather than wait for records.
	HighWatermark    int64
	NewHighWatermark bool
}

// FollowerFetch records a fetch from follower replicaID at fetchOffset
// (its log end offset) with logStartOffset (its log start offset), whose
// last fetched batch had lastFetchedEpoch:
// it checks the leader epoch (as CheckLeader), looks for divergence,
// updates the follower's state (LEO and last caught-up time), advances the
// high watermark and proposes adding the follower to the ISR when it
// caught up. The caller reads the log up to its end.
func (p *Partition) FollowerFetch(replicaID, currentLeaderEpoch int32, fetchOffset, logStartOffset int64, lastFetchedEpoch int32) (FollowerFetchResult, int16) {
	res := FollowerFetchResult{DivergingEpoch: -1, DivergingEndOffset: -1}
	if lastFetchedEpoch >= 0 {
		endEpoch, endOffset := p.log.EndOffsetForEpoch(lastFetchedEpoch)
		// A leader that knows no epoch that old answers (-1, -1), which
		// the wire cannot tell from "no divergence": as Kafka, the fetch
		// then goes on at fetchOffset.
		if e, o, d := DivergingEpoch(lastFetchedEpoch, fetchOffset, endEpoch, endOffset); d && o >= 0 {
			res.Diverged, res.DivergingEpoch, res.DivergingEndOffset = true, e, o
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if code := p.checkLeaderLocked(currentLeaderEpoch); code != 0 {
		return res, code
	}
	f, ok := p.mu.followers[replicaID]
	if !ok {
		return res, kerr.ReplicaNotAvailable.Code
	}
	if !res.Diverged {
		leo := p.log.LogEndOffset()
		if fetchOffset > leo || fetchOffset < p.log.LogStartOffset() {
			res.HighWatermark = p.log.HighWatermark()
			return res, kerr.OffsetOutOfRange.Code
		}
		f = UpdateFollowerFetch(f, fetchOffset, leo, p.m.now())
		f.LogStartOffset = logStartOffset
		p.mu.followers[replicaID] = f
		p.maybeIncrementHighWatermarkLocked()
		hw := p.log.HighWatermark()
		res.NewHighWatermark = hw > f.HighWatermarkSent
		f.HighWatermarkSent = hw
		p.mu.followers[replicaID] = f
		if p.mu.pendingISR == nil && CanJoinISR(replicaID, p.mu.replicas, p.mu.isr, f.LogEndOffset, p.log.HighWatermark(), p.mu.epochStartOffset) &&
			p.m.isrEligible(replicaID) {
			p.proposeISRLocked(append(slices.Clone(p.mu.isr), replicaID))
		}
	}
	res.HighWatermark = p.log.HighWatermark()
	return res, 0
}

// maybeShrinkISR proposes removing the followers that were not caught up
// within replica.lag.time.max.ms (Kafka's maybeShrinkIsr).
func (p *Partition) maybeShrinkISR() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.role != RoleLeader || p.mu.pendingISR != nil {
		return
	}
	out := OutOfSyncReplicas(p.m.opts.NodeID, p.mu.isr, p.mu.followers, p.m.now(), p.m.opts.ReplicaLagTimeMax)
	if len(out) == 0 {
		return
	}
	p.m.logger.Info("shrinking ISR", "topic", p.tp.Topic, "partition", p.tp.Partition, "isr", p.mu.isr, "out_of_sync", out)
	p.proposeISRLocked(Without(p.mu.isr, out))
}

// proposeISRLocked sends an AlterPartition for isr; until it is answered
// the high watermark honours the maximal ISR.
// REQUIRES: p.mu held, role leader, no change in flight.
func (p *Partition) proposeISRLocked(isr []int32) {
	p.mu.pendingISR = isr
	req := controller.AlterPartition{
		TopicID: p.topicID, Partition: p.tp.Partition, LeaderID: p.m.opts.NodeID,
		LeaderEpoch: p.mu.leaderEpoch, PartitionEpoch: p.mu.partitionEpoch, NewISR: slices.Clone(isr),
	}
	p.m.alterPartition(p, req)
}

// countISRChangeLocked counts a committed ISR change of this leader's own
// proposal as a shrink or an expand, for metrics. Whichever of the
// controller's answer and the next image applies it first counts it; the
// other finds the ISR already equal.
// REQUIRES: p.mu held.
func (p *Partition) countISRChangeLocked(isr []int32) {
	switch {
	case len(isr) < len(p.mu.isr):
		p.m.isrShrinks.Add(1)
	case len(isr) > len(p.mu.isr):
		p.m.isrExpands.Add(1)
	}
}

// completeAlter applies the controller's answer to an AlterPartition.
func (p *Partition) completeAlter(req controller.AlterPartition, got controller.Partition, code int16, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.role != RoleLeader || p.mu.leaderEpoch != req.LeaderEpoch || !slices.Equal(p.mu.pendingISR, req.NewISR) {
		return // settled by a newer image already
	}
	if err == nil && (stateMovedOn(code) || code == 0 && got.LeaderEpoch > p.mu.leaderEpoch) {
		// The partition moved on under this proposal, and the proposal
		// may be how it did: an ISR addition that completes a
		// reassignment moving leadership away is committed with a new
		// leader (answered with that newer leader epoch, Kafka's
		// NEW_LEADER_ELECTED), and a second proposal, or a retry, is
		// then refused as "not the leader". Dropping the proposal here
		// let the high watermark advance over the old ISR, without the
		// replica the controller had just put in it and made leader:
		// acknowledged records lost (docs/DURABILITY.md finding 7). The
		// maximal ISR stays until the image that moved the partition on
		// settles it (apply clears pendingISR), as Kafka's
		// Partition.handleAlterPartitionError keeps its pending state
		// for every error but OPERATION_NOT_ATTEMPTED and
		// INELIGIBLE_REPLICA.
		p.m.logger.Info("AlterPartition answered with a newer partition state; the ISR proposed stays in force until the metadata settles it",
			"topic", p.tp.Topic, "partition", p.tp.Partition, "isr", req.NewISR, "code", code, "leader_epoch", got.LeaderEpoch)
		return
	}
	p.mu.pendingISR = nil
	switch {
	case err != nil || code != 0:
		p.m.logger.Warn("AlterPartition refused", "topic", p.tp.Topic, "partition", p.tp.Partition, "isr", req.NewISR, "code", code, "err", err)
	case got.PartitionEpoch > p.mu.partitionEpoch && got.LeaderEpoch == p.mu.leaderEpoch:
		p.countISRChangeLocked(got.ISR)
		p.mu.isr = slices.Clone(got.ISR)
		p.mu.partitionEpoch = got.PartitionEpoch
	}
	p.maybeIncrementHighWatermarkLocked()
	p.notifyLocked()
}

// stateMovedOn reports whether an AlterPartition refusal says the
// controller holds a newer state of the partition (leader, leader epoch,
// partition epoch, or the topic gone), which the metadata image will
// bring: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
// INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION.
func stateMovedOn(code int16) bool {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.FencedLeaderEpoch.Code, kerr.InvalidUpdateVersion.Code, kerr.UnknownTopicOrPartition.Code:
		return true
	}
	return false
}

// appendFromLeader appends batches fetched from the leader of leaderEpoch
// and moves the follower's high watermark to min(leaderHW, LEO).
func (p *Partition) appendFromLeader(leaderEpoch int32, records []byte, leaderHW int64) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if !p.isFollowerOf(leaderEpoch) {
		return ErrStaleEpoch
	}
	if len(records) > 0 {
		if _, err := p.log.AppendAsFollower(records); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.setHighWatermarkLocked(min(leaderHW, p.log.LogEndOffset()))
	p.mu.Unlock()
	return nil
}

// truncateTo truncates a follower's log for the leader of leaderEpoch.
func (p *Partition) truncateTo(leaderEpoch int32, offset int64) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if !p.isFollowerOf(leaderEpoch) {
		return ErrStaleEpoch
	}
	return p.log.TruncateTo(offset)
}

// truncateFullyAndStartAt empties a follower's log and restarts it at offset.
func (p *Partition) truncateFullyAndStartAt(leaderEpoch int32, offset int64) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if !p.isFollowerOf(leaderEpoch) {
		return ErrStaleEpoch
	}
	return p.log.TruncateFullyAndStartAt(offset)
}

// advanceLogStart follows the leader's log start offset (DeleteRecords
// and retention on the leader), up to the follower's high watermark.
func (p *Partition) advanceLogStart(leaderEpoch int32, leaderLogStart int64) error {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if !p.isFollowerOf(leaderEpoch) {
		return ErrStaleEpoch
	}
	if leaderLogStart <= p.log.LogStartOffset() || leaderLogStart > p.log.HighWatermark() {
		return nil
	}
	_, err := p.log.DeleteRecordsBefore(leaderLogStart)
	return err
}

func (p *Partition) isFollowerOf(leaderEpoch int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.role == RoleFollower && p.mu.leaderEpoch == leaderEpoch
}

// DeleteRecords moves the log start offset up to offset (-1: the high
// watermark) on the leader (Kafka's deleteRecordsOnLeader); an offset past
// the high watermark is OFFSET_OUT_OF_RANGE. Followers follow through the
// log start offset of fetch responses.
func (p *Partition) DeleteRecords(offset int64) (lowWatermark int64, code int16, err error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	if code := p.CheckLeader(-1); code != 0 {
		return -1, code, nil
	}
	hw := p.log.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, kerr.OffsetOutOfRange.Code, nil
	}
	low, err := p.log.DeleteRecordsBefore(offset)
	return low, 0, err
}
