package sharecoord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/share"
)

// RouterOptions configures the Persister of NewPersister.
type RouterOptions struct {
	// Local is this node's share coordinator (required).
	Local *Coordinator
	// NodeID is this node's id.
	NodeID int32
	// Leaders returns the leader of every __share_group_state partition as
	// the metadata image has them (-1: none), nil when the topic does not
	// exist (required).
	Leaders func() []int32
	// CreateTopic asks for __share_group_state to be created; the Persister
	// calls it when Leaders returns nil, then waits for the topic (nil:
	// the topic is created elsewhere).
	CreateTopic func(ctx context.Context) error
	// Send sends a request to another broker (required).
	Send func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
	// RetryBackoff is the first wait before a retry, doubled up to 1 s
	// (default 50 ms).
	RetryBackoff time.Duration
	Logger       *slog.Logger
}

// router is the broker's Persister: each call goes to the node leading the
// key's __share_group_state partition, retried while that is unknown,
// moving or loading, until the caller's context ends.
type router struct {
	o RouterOptions
	// creating is set while a CreateStateTopic runs: lookups that find
	// the topic missing start one creation, not one each.
	creating atomic.Bool
}

// NewPersister returns the Persister the rest of the broker uses: calls
// for keys whose partition this node leads go to o.Local, the others to
// the leader's InitializeShareGroupState, ReadShareGroupState, ... (Kafka's
// PersisterStateManager does the same with FindCoordinator first).
// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
// REQUEST_TIMED_OUT and failed sends are retried with the image's leaders
// of the moment, until ctx ends; the last such error is then returned,
// wrapped with ctx's.
func NewPersister(o RouterOptions) (share.Persister, error) {
	if o.Local == nil || o.Leaders == nil || o.Send == nil {
		return nil, fmt.Errorf("%w: RouterOptions.Local, Leaders and Send are required", ErrOptions)
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = 50 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &router{o: o}, nil
}

// errNoLeader is retried: the state partition has no leader (yet). A
// caller whose context ends meanwhile sees COORDINATOR_NOT_AVAILABLE, as
// Kafka's FindCoordinator answers then.
var errNoLeader = fmt.Errorf("%w: share: no leader for the __share_group_state partition", kerr.CoordinatorNotAvailable)

// retriable reports whether a call that failed with err may succeed at
// another node or later.
func retriable(err error) bool {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return false // internal failures and the caller's context
	}
	switch ke {
	case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress, kerr.RequestTimedOut,
		kerr.NotLeaderForPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend:
		return true
	}
	return false
}

// route runs local (this node leads k's partition) or remote (with the
// leader's id) until one returns nil or an error not worth a retry.
func (r *router) route(ctx context.Context, k share.Key, local func() error, remote func(leader int32) error) error {
	backoff := r.o.RetryBackoff
	for {
		var err error
		leaders := r.o.Leaders()
		switch {
		case len(leaders) == 0:
			err = fmt.Errorf("%w: %s does not exist", errNoLeader, share.StateTopic)
			if cerr := r.CreateStateTopic(ctx); cerr != nil {
				r.o.Logger.Warn("share: cannot create the share state topic yet", "topic", share.StateTopic, "err", cerr)
			}
		default:
			switch leader := leaders[PartitionFor(k, int32(len(leaders)))]; {
			case leader < 0:
				err = errNoLeader
			case leader == r.o.NodeID:
				err = local()
			default:
				err = remote(leader)
			}
		}
		if err == nil || !retriable(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// send sends req to broker and returns its response, or the send's error
// as COORDINATOR_NOT_AVAILABLE (retried).
func (r *router) send(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
	resp, err := r.o.Send(ctx, broker, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: share: sending %s to broker %d: %w", kerr.CoordinatorNotAvailable, kmsg.NameForKey(req.Key()), broker, err)
	}
	return resp, nil
}

// codeErr turns a response's error code and message into an error.
func codeErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := kerr.ErrorForCode(code)
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}

// errShortResponse is an answer without the partition asked about.
var errShortResponse = fmt.Errorf("%w: share: response without the partition asked about", kerr.UnknownServerError)

func (r *router) Initialize(ctx context.Context, k share.Key, stateEpoch int32, startOffset int64) error {
	return r.route(ctx, k, func() error {
		return r.o.Local.Initialize(ctx, k, stateEpoch, startOffset)
	}, func(leader int32) error {
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewInitializeShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		p := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.StartOffset = k.Partition, stateEpoch, startOffset
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := r.send(ctx, leader, req)
		if err != nil {
			return err
		}
		for _, t := range resp.(*kmsg.InitializeShareGroupStateResponse).Topics {
			for _, p := range t.Partitions {
				if t.TopicID == k.TopicID && p.Partition == k.Partition {
					return codeErr(p.ErrorCode, p.ErrorMessage)
				}
			}
		}
		return errShortResponse
	})
}

func (r *router) Read(ctx context.Context, k share.Key, leaderEpoch int32) (st share.State, ok bool, err error) {
	err = r.route(ctx, k, func() error {
		var err error
		st, ok, err = r.o.Local.Read(ctx, k, leaderEpoch)
		return err
	}, func(leader int32) error {
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewReadShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		p := kmsg.NewReadShareGroupStateRequestTopicPartition()
		p.Partition, p.LeaderEpoch = k.Partition, leaderEpoch
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := r.send(ctx, leader, req)
		if err != nil {
			return err
		}
		for _, t := range resp.(*kmsg.ReadShareGroupStateResponse).Topics {
			for _, p := range t.Partitions {
				if t.TopicID != k.TopicID || p.Partition != k.Partition {
					continue
				}
				if p.ErrorCode == kerr.InvalidRequest.Code && p.ErrorMessage != nil && *p.ErrorMessage == ReadUninitializedMessage {
					st, ok = share.State{}, false
					return nil
				}
				if err := codeErr(p.ErrorCode, p.ErrorMessage); err != nil {
					return err
				}
				st = share.State{StateEpoch: p.StateEpoch, LeaderEpoch: leaderEpoch, StartOffset: p.StartOffset}
				for _, b := range p.StateBatches {
					st.Batches = append(st.Batches, share.Batch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount})
				}
				ok = true
				return nil
			}
		}
		return errShortResponse
	})
	return st, ok, err
}

func (r *router) Write(ctx context.Context, k share.Key, st share.State) error {
	return r.route(ctx, k, func() error {
		return r.o.Local.Write(ctx, k, st)
	}, func(leader int32) error {
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewWriteShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset = k.Partition, st.StateEpoch, st.LeaderEpoch, st.StartOffset
		p.DeliveryCompleteCount = -1
		for _, b := range st.Batches {
			sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
			p.StateBatches = append(p.StateBatches, sb)
		}
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := r.send(ctx, leader, req)
		if err != nil {
			return err
		}
		for _, t := range resp.(*kmsg.WriteShareGroupStateResponse).Topics {
			for _, p := range t.Partitions {
				if t.TopicID == k.TopicID && p.Partition == k.Partition {
					return codeErr(p.ErrorCode, p.ErrorMessage)
				}
			}
		}
		return errShortResponse
	})
}

func (r *router) Delete(ctx context.Context, k share.Key) error {
	return r.route(ctx, k, func() error {
		return r.o.Local.Delete(ctx, k)
	}, func(leader int32) error {
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = k.Group
		t := kmsg.NewDeleteShareGroupStateRequestTopic()
		t.TopicID = k.TopicID
		p := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		p.Partition = k.Partition
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := r.send(ctx, leader, req)
		if err != nil {
			return err
		}
		for _, t := range resp.(*kmsg.DeleteShareGroupStateResponse).Topics {
			for _, p := range t.Partitions {
				if t.TopicID == k.TopicID && p.Partition == k.Partition {
					return codeErr(p.ErrorCode, p.ErrorMessage)
				}
			}
		}
		return errShortResponse
	})
}

func (r *router) ReadSummary(ctx context.Context, k share.Key) (st share.State, ok bool, err error) {
	err = r.route(ctx, k, func() error {
		var err error
		st, ok, err = r.o.Local.ReadSummary(ctx, k)
		if ok && uninitializedSummary(st) {
			// As a remote answer reads (below), whichever node leads.
			st, ok = share.State{}, false
		}
		return err
	}, func(leader int32) error {
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.GroupID = k.Group
		t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
		t.TopicID = k.TopicID
		p := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		p.Partition = k.Partition
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		resp, err := r.send(ctx, leader, req)
		if err != nil {
			return err
		}
		for _, t := range resp.(*kmsg.ReadShareGroupStateSummaryResponse).Topics {
			for _, p := range t.Partitions {
				if t.TopicID != k.TopicID || p.Partition != k.Partition {
					continue
				}
				if err := codeErr(p.ErrorCode, p.ErrorMessage); err != nil {
					return err
				}
				st = share.State{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
				// Kafka answers a share-partition never initialized with
				// start offset -1 and epochs 0 (see uninitializedSummary).
				ok = !uninitializedSummary(st)
				if !ok {
					st = share.State{}
				}
				return nil
			}
		}
		return errShortResponse
	})
	return st, ok, err
}

// uninitializedSummary reports whether a ReadShareGroupStateSummary
// answer is Kafka's for a share-partition never initialized. One
// initialized at state epoch 0 without a start offset, and not read by a
// leader since, looks the same (Initialize records leader epoch 0); both
// mean "no start offset yet", which is all the admin APIs show.
func uninitializedSummary(st share.State) bool {
	return st.StartOffset == -1 && st.StateEpoch == 0 && st.LeaderEpoch == 0
}

// TopicCreator is implemented by the Persister of NewPersister: it asks
// for __share_group_state to be created (FindCoordinator SHARE does, as
// Kafka creates the topic on the first lookup).
type TopicCreator interface {
	CreateStateTopic(ctx context.Context) error
}

// CreateStateTopic calls RouterOptions.CreateTopic (nil: nothing to do);
// while one call runs, others return nil at once.
func (r *router) CreateStateTopic(ctx context.Context) error {
	if r.o.CreateTopic == nil || !r.creating.CompareAndSwap(false, true) {
		return nil
	}
	defer r.creating.Store(false)
	return r.o.CreateTopic(ctx)
}
