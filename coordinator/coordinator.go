package coordinator

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/coordinator/internal/shards"
)

// TopicResolver maps topic IDs to names and back, for OffsetCommit and
// OffsetFetch v10, which name topics by ID while __consumer_offsets keys
// hold names.
type TopicResolver interface {
	TopicName(id [16]byte) (string, bool)
	TopicID(name string) ([16]byte, bool)
}

// Options configures a Coordinator. Zero durations and sizes take Kafka's
// defaults.
type Options struct {
	// NumPartitions is offsets.topic.num.partitions (default 50).
	NumPartitions int32
	// OpenLog returns the log of one __consumer_offsets partition; the
	// broker creates the topic if needed.
	OpenLog func(partition int32) (Log, error)
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger

	MinSessionTimeout     time.Duration // group.min.session.timeout.ms, default 6s
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms, default 30m
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms, default 3s; negative for none
	MaxGroupSize          int           // group.max.size, default unlimited
	// OffsetsRetention is offsets.retention.minutes (default 7 days).
	OffsetsRetention time.Duration
	// OffsetsRetentionCheckInterval is offsets.retention.check.interval.ms
	// (default 10 minutes).
	OffsetsRetentionCheckInterval time.Duration
	// MaxMetadataBytes is offset.metadata.max.bytes (default 4096).
	MaxMetadataBytes int
	// MaxMessageBytes is the largest batch the coordinator writes to
	// __consumer_offsets: the topic's max.message.bytes, which is the
	// broker's message.max.bytes (default 1048588).
	MaxMessageBytes int
	// NewMemberID returns prefix-UUID (default: a random UUID v4).
	NewMemberID func(prefix string) string
	// Topics resolves topic IDs; without it v10 topic IDs are
	// UNKNOWN_TOPIC_ID.
	Topics TopicResolver
	// WriteTimeout is offsets.commit.timeout.ms (default 5s): the
	// longest a ConsumerGroupHeartbeat, OffsetCommit, TxnOffsetCommit,
	// OffsetDelete, DeleteGroups or transaction marker is held, from its
	// arrival, waiting for its shard and for the shard's writes to be
	// committed, before it is answered COORDINATOR_NOT_AVAILABLE.
	WriteTimeout time.Duration

	// KIP-848 consumer groups.
	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms, default 45s
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms, default 5s
	ConsumerMaxGroupSize      int           // group.consumer.max.size, default unlimited
	// ConsumerAssignors is group.consumer.assignors (default uniform,
	// range); Kafka's class names are accepted.
	ConsumerAssignors []string
	// ConsumerMigrationPolicy is group.consumer.migration.policy
	// (disabled, upgrade, downgrade, bidirectional; default
	// bidirectional): online migration of live groups between the
	// classic protocol and KIP-848.
	ConsumerMigrationPolicy string

	// KIP-932 share groups.
	ShareSessionTimeout    time.Duration // group.share.session.timeout.ms, default 45s
	ShareHeartbeatInterval time.Duration // group.share.heartbeat.interval.ms, default 5s
	ShareMaxGroupSize      int           // group.share.max.size, default 200

	StreamsSessionTimeout        time.Duration // group.streams.session.timeout.ms, default 45s
	StreamsHeartbeatInterval     time.Duration // group.streams.heartbeat.interval.ms, default 5s
	StreamsMaxGroupSize          int           // group.streams.max.size, default unlimited
	StreamsNumStandbyReplicas    int           // group.streams.num.standby.replicas, default 0
	StreamsAcceptableRecoveryLag int64         // group.streams.acceptable.recovery.lag, default 10000
	StreamsTaskOffsetInterval    time.Duration // group.streams.task.offset.interval.ms, default 60s
	// StreamsInitialRebalanceDelay is group.streams.initial.rebalance.delay.ms
	// (Kafka's default 3s; 0 here is none).
	StreamsInitialRebalanceDelay time.Duration
	// GroupConfig returns a group's config overrides (the GROUP config
	// resource: consumer.session.timeout.ms, consumer.heartbeat.interval.ms,
	// share.session.timeout.ms, share.heartbeat.interval.ms override the
	// broker's settings for that group); nil for none.
	GroupConfig func(group string) map[string]string
	// Persister stores share-partition state (the share coordinator's,
	// adapted by the broker); the group coordinator initializes, reads and
	// deletes it. Nil: share state is not kept (tests and tools).
	Persister SharePersister
}

func (o *Options) setDefaults() {
	if o.NumPartitions <= 0 {
		o.NumPartitions = 50
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MinSessionTimeout == 0 {
		o.MinSessionTimeout = 6 * time.Second
	}
	if o.MaxSessionTimeout == 0 {
		o.MaxSessionTimeout = 30 * time.Minute
	}
	if o.InitialRebalanceDelay == 0 {
		o.InitialRebalanceDelay = 3 * time.Second
	} else if o.InitialRebalanceDelay < 0 {
		o.InitialRebalanceDelay = 0
	}
	if o.MaxGroupSize <= 0 {
		o.MaxGroupSize = math.MaxInt32
	}
	if o.OffsetsRetention <= 0 {
		o.OffsetsRetention = 7 * 24 * time.Hour
	}
	if o.OffsetsRetentionCheckInterval <= 0 {
		o.OffsetsRetentionCheckInterval = 10 * time.Minute
	}
	if o.MaxMetadataBytes <= 0 {
		o.MaxMetadataBytes = 4096
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 1048588
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.ConsumerSessionTimeout <= 0 {
		o.ConsumerSessionTimeout = 45 * time.Second
	}
	if o.ConsumerHeartbeatInterval <= 0 {
		o.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if o.ConsumerMaxGroupSize <= 0 {
		o.ConsumerMaxGroupSize = math.MaxInt32
	}
	if o.ShareSessionTimeout <= 0 {
		o.ShareSessionTimeout = 45 * time.Second
	}
	if o.ShareHeartbeatInterval <= 0 {
		o.ShareHeartbeatInterval = 5 * time.Second
	}
	if o.ShareMaxGroupSize <= 0 {
		o.ShareMaxGroupSize = 200
	}
	if o.StreamsSessionTimeout <= 0 {
		o.StreamsSessionTimeout = 45 * time.Second
	}
	if o.StreamsHeartbeatInterval <= 0 {
		o.StreamsHeartbeatInterval = 5 * time.Second
	}
	if o.StreamsAcceptableRecoveryLag <= 0 {
		o.StreamsAcceptableRecoveryLag = 10000
	}
	if o.StreamsTaskOffsetInterval <= 0 {
		o.StreamsTaskOffsetInterval = time.Minute
	}
	var assignors []string
	for _, a := range o.ConsumerAssignors {
		if as, ok := assignorByName(a); ok && !slices.Contains(assignors, as.Name()) {
			assignors = append(assignors, as.Name())
		}
	}
	if len(assignors) == 0 {
		assignors = []string{"uniform", "range"}
	}
	o.ConsumerAssignors = assignors
	if o.NewMemberID == nil {
		o.NewMemberID = func(prefix string) string { return prefix + "-" + randomUUID() }
	}
}

// randomUUID returns a random (v4) UUID in its usual text form.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// Coordinator is the classic group coordinator. It owns the groups of the
// __consumer_offsets partitions it has loaded, one goroutine per partition.
// Its request methods take kmsg requests and return kmsg responses; they
// are safe for concurrent use, and JoinGroup and SyncGroup block until the
// rebalance step they wait for ends.
type Coordinator struct {
	opts        Options
	logger      *slog.Logger
	groupConfig GroupConfig
	cgConfig    ConsumerGroupConfig
	sgConfig    ShareGroupConfig
	stConfig    StreamsGroupConfig
	persister   atomic.Pointer[SharePersister] // Options.Persister, or SetPersister's

	shards *shards.Set[*shard] // by __consumer_offsets partition
}

// New returns a Coordinator with no partition loaded.
func New(opts Options) (*Coordinator, error) {
	opts.setDefaults()
	if opts.OpenLog == nil {
		return nil, fmt.Errorf("coordinator: Options.OpenLog is required")
	}
	c := &Coordinator{opts: opts, logger: opts.Logger}
	c.groupConfig = GroupConfig{
		MinSessionTimeout:     opts.MinSessionTimeout,
		MaxSessionTimeout:     opts.MaxSessionTimeout,
		InitialRebalanceDelay: opts.InitialRebalanceDelay,
		MaxSize:               opts.MaxGroupSize,
		NewMemberID:           opts.NewMemberID,
	}
	c.cgConfig = ConsumerGroupConfig{
		SessionTimeout:    opts.ConsumerSessionTimeout,
		HeartbeatInterval: opts.ConsumerHeartbeatInterval,
		MaxSize:           opts.ConsumerMaxGroupSize,
		Assignors:         opts.ConsumerAssignors,
		MigrationPolicy:   opts.ConsumerMigrationPolicy,
	}
	c.stConfig = StreamsGroupConfig{
		SessionTimeout:        opts.StreamsSessionTimeout,
		HeartbeatInterval:     opts.StreamsHeartbeatInterval,
		MaxSize:               opts.StreamsMaxGroupSize,
		NumStandbyReplicas:    opts.StreamsNumStandbyReplicas,
		AcceptableRecoveryLag: opts.StreamsAcceptableRecoveryLag,
		TaskOffsetInterval:    opts.StreamsTaskOffsetInterval,
		InitialRebalanceDelay: opts.StreamsInitialRebalanceDelay,
	}
	c.sgConfig = ShareGroupConfig{
		SessionTimeout:    opts.ShareSessionTimeout,
		HeartbeatInterval: opts.ShareHeartbeatInterval,
		MaxSize:           opts.ShareMaxGroupSize,
	}
	if opts.Persister != nil {
		c.SetPersister(opts.Persister)
	}
	c.shards = shards.New[*shard]()
	return c, nil
}

func (c *Coordinator) now() time.Time { return c.opts.Now() }

// NumPartitions returns offsets.topic.num.partitions.
func (c *Coordinator) NumPartitions() int32 { return c.opts.NumPartitions }

// LoadAll loads every __consumer_offsets partition: what a single node,
// which leads all of them, does at start.
func (c *Coordinator) LoadAll() error {
	for p := range c.opts.NumPartitions {
		if err := c.LoadPartition(p); err != nil {
			return err
		}
	}
	return nil
}

// LoadPartition starts serving the groups of one partition, after reading
// it in the background (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS).
// The broker calls it when this node becomes the partition's leader.
func (c *Coordinator) LoadPartition(p int32) error {
	if !c.shards.Load(p, func() *shard { return newShard(c, p) }) {
		return ErrClosed
	}
	return nil
}

// UnloadPartition stops serving one partition; blocked requests get
// NOT_COORDINATOR. The broker calls it when this node stops leading it.
func (c *Coordinator) UnloadPartition(p int32) { c.shards.Unload(p) }

// WaitLoaded waits until every loaded partition finished reading its log,
// for tests and start-up.
func (c *Coordinator) WaitLoaded(ctx context.Context) error { return c.shards.WaitLoaded(ctx) }

// Close stops every partition and waits for their goroutines.
func (c *Coordinator) Close() { c.shards.Close() }

// shardFor returns the shard owning group, or the error code to answer.
func (c *Coordinator) shardFor(group string) (*shard, int16) {
	s, ok := c.shards.Get(PartitionFor(group, c.opts.NumPartitions))
	if !ok {
		return nil, kerr.NotCoordinator.Code
	}
	return s, 0
}

// shardList returns the loaded shards in partition order.
func (c *Coordinator) shardList() []*shard { return c.shards.List() }
