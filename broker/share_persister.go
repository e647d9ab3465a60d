package broker

import (
	"context"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
)

// groupSharePersister adapts the share coordinator's Persister to the
// group coordinator's coordinator.SharePersister (which cannot name
// share's types: coordinator/share imports coordinator). Wire it as
// coordinator.Options.Persister: NewGroupSharePersister(p).
type groupSharePersister struct{ p share.Persister }

// NewGroupSharePersister returns p as the group coordinator sees it; nil
// for a nil p.
func NewGroupSharePersister(p share.Persister) coordinator.SharePersister {
	if p == nil {
		return nil
	}
	return groupSharePersister{p}
}

func shareKey(k coordinator.SharePartitionKey) share.Key {
	return share.Key{Group: k.Group, TopicID: k.TopicID, Partition: k.Partition}
}

func (g groupSharePersister) Initialize(ctx context.Context, k coordinator.SharePartitionKey, stateEpoch int32, startOffset int64) error {
	return g.p.Initialize(ctx, shareKey(k), stateEpoch, startOffset)
}

func (g groupSharePersister) Delete(ctx context.Context, k coordinator.SharePartitionKey) error {
	return g.p.Delete(ctx, shareKey(k))
}

func (g groupSharePersister) ReadSummary(ctx context.Context, k coordinator.SharePartitionKey) (coordinator.ShareStateSummary, bool, error) {
	st, ok, err := g.p.ReadSummary(ctx, shareKey(k))
	return coordinator.ShareStateSummary{StateEpoch: st.StateEpoch, LeaderEpoch: st.LeaderEpoch, StartOffset: st.StartOffset}, ok, err
}

// wireShares hands the share coordinator's Persister to the group
// coordinator, which initializes share-partitions when a share group first
// gets them assigned and serves the share admin APIs over it.
func (n *Node) wireShares(deps *handlers.Deps) {
	if n.groups != nil && deps.SharePersister != nil {
		n.groups.SetPersister(NewGroupSharePersister(deps.SharePersister))
	}
}
