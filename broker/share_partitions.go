package broker

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/broker/handlers"
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

// sharePartitions is the node's share-partition manager, set once the
// handlers' dependencies are built and read by the metadata callback.
type sharePartitions struct {
	m atomic.Pointer[sharepart.Manager]
}

// start builds the manager with the share coordinator's Persister
// (deps.SharePersister, set by startShareState) and the groups' config
// overrides from the metadata image, and gives it to the handlers.
func (s *sharePartitions) start(cfg *config.Config, deps *handlers.Deps, logger *slog.Logger) {
	var p sharestate.Persister = unavailablePersister{}
	if deps.SharePersister != nil {
		p = deps.SharePersister
	}
	var groupConfig func(string) map[string]string
	if ctrl := deps.Controller; ctrl != nil {
		groupConfig = func(group string) map[string]string { return ctrl.Image().GroupConfig(group) }
	}
	m := newSharePartitions(cfg, p, groupConfig, logger.With("component", "share-partitions"))
	deps.Shares = m
	s.m.Store(m)
}

// reconcile drops the share-partitions img says this node no longer leads.
func (s *sharePartitions) reconcile(img *controller.Image, replicas *replica.Manager) {
	reconcileSharePartitions(s.m.Load(), img, replicas)
}

// connClosed closes the share sessions opened on a client connection that
// closed and releases their members' records (Server.OnConnClose).
func (s *sharePartitions) connClosed(id uint64) {
	if m := s.m.Load(); m != nil {
		m.ConnectionClosed(sharepart.ConnID(id))
	}
}

// close stops the manager's lock timers.
func (s *sharePartitions) close() {
	if m := s.m.Load(); m != nil {
		m.Close()
	}
}

// unavailablePersister is the share state store of a node without a share
// coordinator: every call is COORDINATOR_NOT_AVAILABLE.
type unavailablePersister struct{}

func (unavailablePersister) Initialize(context.Context, sharestate.Key, int32, int64) error {
	return kerr.CoordinatorNotAvailable
}
func (unavailablePersister) Read(context.Context, sharestate.Key, int32) (sharestate.State, bool, error) {
	return sharestate.State{}, false, kerr.CoordinatorNotAvailable
}
func (unavailablePersister) Write(context.Context, sharestate.Key, sharestate.State) error {
	return kerr.CoordinatorNotAvailable
}
func (unavailablePersister) Delete(context.Context, sharestate.Key) error {
	return kerr.CoordinatorNotAvailable
}
func (unavailablePersister) ReadSummary(context.Context, sharestate.Key) (sharestate.State, bool, error) {
	return sharestate.State{}, false, kerr.CoordinatorNotAvailable
}
