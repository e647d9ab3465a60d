package broker

import (
	"log/slog"
	"time"

	sharepart "github.com/samsa-broker/samsa/broker/share"
	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	sharestate "github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/storage"
)

// newSharePartitions builds the manager of the share-partitions this node
// leads (broker/share: ShareFetch and ShareAcknowledge, handlers.Deps.Shares)
// over the share state persister p, with the broker's group.share.*
// settings; groupConfig returns a group's dynamic configs
// (controller.Image's group configs). The node closes it on shutdown and
// calls reconcileSharePartitions with every published image.
func newSharePartitions(cfg *config.Config, p sharestate.Persister, groupConfig func(group string) map[string]string, logger *slog.Logger) *sharepart.Manager {
	return sharepart.NewManager(sharepart.Options{
		Persister:               p,
		GroupConfig:             groupConfig,
		RecordLockDuration:      time.Duration(cfg.GroupShareRecordLockDurationMs) * time.Millisecond,
		DeliveryCountLimit:      int(cfg.GroupShareDeliveryCountLimit),
		PartitionMaxRecordLocks: int(cfg.GroupSharePartitionMaxRecordLocks),
		MaxShareSessions:        int(cfg.GroupShareMaxShareSessions),
		Logger:                  logger,
	})
}

// reconcileSharePartitions drops the share-partitions whose partition this
// node no longer leads, or leads at another leader epoch than the one
// they were loaded at (their state is read again by whoever serves them
// next): call it with each published image, after the replica manager
// applied it.
func reconcileSharePartitions(m *sharepart.Manager, img *controller.Image, replicas *replica.Manager) {
	if m == nil || img == nil || replicas == nil {
		return
	}
	m.Reconcile(func(id [16]byte, partition int32) (int32, bool) {
		t := img.TopicsByID[controller.Uuid(id)]
		if t == nil {
			return 0, false
		}
		rp, ok := replicas.Partition(storage.TopicPartition{Topic: t.Name, Partition: partition})
		if !ok {
			return 0, false
		}
		st := rp.State()
		return st.LeaderEpoch, st.Role == replica.RoleLeader
	})
}
