package controller

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Options configure a Controller.
type Options struct {
	NodeID    int32
	ClusterID string
	// Quorum and Machine: the replicated metadata log and the state machine
	// its committed entries are applied to (controller/quorum builds both
	// on Raft). Alternatively Log: a local MetadataLog that New replays and
	// wraps as a one-node quorum of its own (tests, and tools that read a
	// metadata.log).
	Quorum  Quorum
	Machine *Machine
	Log     MetadataLog
	Now     func() time.Time // default time.Now
	Rand    io.Reader        // topic ids and placement; default crypto/rand
	Logger  *slog.Logger     // default slog.Default()

	DefaultPartitions        int32 // for NumPartitions -1; values < 1 mean 1
	DefaultReplicationFactor int16 // for ReplicationFactor -1; values < 1 mean 1

	// UncleanLeaderElection tells which topics allow unclean leader
	// election (unclean.leader.election.enable); nil: none.
	UncleanLeaderElection UncleanPolicy

	// EligibleLeaderReplicas enables eligible leader replicas (KIP-966,
	// elr.go) and gives each topic's effective min.insync.replicas; nil
	// disables them (eligible.leader.replicas.version 0).
	EligibleLeaderReplicas ELRPolicy

	// SessionTimeout is how long a broker may go without Heartbeat before
	// ExpireSessions fences it; 0 disables expiry.
	SessionTimeout time.Duration

	// MaxPartitions bounds the partitions of the whole cluster: a
	// CreateTopics or CreatePartitions that would exceed it fails with
	// POLICY_VIOLATION. 0 means no bound beyond Kafka's per-request one
	// (MaxPartitionsPerRequest).
	MaxPartitions int

	// ValidateTopicConfig checks a topic's complete override map; 0 = ok.
	// Nil accepts everything.
	ValidateTopicConfig func(map[string]string) (code int16, msg string)

	// TopicConfigDefault returns the default of a topic config, which
	// IncrementalAlterConfigs APPEND and SUBTRACT start from when the topic
	// has no override. Nil means "no default" (start from an empty list).
	TopicConfigDefault func(name string) (string, bool)

	// OnChange is called with the image before and after each applied
	// change, in log order, never inside the apply step and never under the
	// write lock. A local write returns only after OnChange saw its change;
	// changes committed elsewhere (another controller of the quorum, or a
	// snapshot) are delivered by the controller's publisher goroutine.
	// New delivers every change applied so far (with a Log: one call from
	// the empty image to the replayed one), unless CaughtUp holds them.
	// Image() returns next only after OnChange(prev, next) returned.
	// OnChange must not call the controller's write methods (it would
	// deadlock).
	OnChange func(prev, next *Image)

	// CaughtUp, when set, holds publishing back (OnChange and Image) until
	// it returns true for an applied image: the changes applied until then
	// are coalesced, and the first one published goes from the empty image
	// straight to the first image CaughtUp accepts. It is Kafka's initial
	// catch-up of a broker's metadata publishers: a restarting node
	// replays the snapshot and log it kept on disk before it learns what
	// the quorum committed since, and reconciling its logs, replicas and
	// coordinators against those old images would make it act, for a
	// moment, on leaderships and epochs the cluster left long ago (an old
	// leader epoch assigned at the log end, logs deleted and re-created;
	// docs/DURABILITY.md, finding 3). A broker passes "my registration of
	// this process is in the image": that record was committed after the
	// node started, so an image holding it holds every change committed
	// before. Nil publishes every change as it is applied.
	CaughtUp func(*Image) bool
}

// Quorum replicates batches of metadata records. Implementations apply
// every committed batch, in log order, to the Machine given to New.
type Quorum interface {
	// Propose replicates recs, decided against the image at offset base,
	// as one batch, and returns once the batch is committed and applied to
	// the Machine, with the Machine's result (ErrStale, ErrApply). It
	// returns an error wrapping ErrNotController when this node is not the
	// active controller or lost that role before the batch committed (it
	// may still commit then: the caller cannot know), and one wrapping
	// ErrLogFailed when the local log cannot be written.
	Propose(base int64, recs []Record) error
	// Leading reports whether this node is the active controller and its
	// Machine has applied every batch committed before it took the role,
	// so that decisions made now read the newest image.
	Leading() bool
	// LeaderID is the node id of the active controller, -1 when unknown.
	LeaderID() int32
}

// Controller owns the cluster metadata: it decides changes, commits them
// through the Quorum, and publishes the images its Machine applies.
//
// Lock order: writeMu, then the Machine's lock (inside Propose and
// Image); notifyMu, then the Machine's lock. writeMu and notifyMu are
// never held together. writeMu is held across Propose on purpose: a
// decision must be made against the image the batch will land on, so
// local writers are serialized end to end (the batch's base offset makes a
// decision that raced a leader change fail instead of applying to the
// wrong image). Readers never lock.
type Controller struct {
	opts    Options
	machine *Machine
	quorum  Quorum
	// image is the published image: every change in it has been delivered
	// to OnChange, so a reader never sees a topic whose local log the
	// broker has not created yet.
	image atomic.Pointer[Image]

	writeMu sync.Mutex // serializes decide → propose
	failed  error      // REQUIRES: writeMu held; sticky log failure

	notifyMu sync.Mutex // held while calling OnChange
	// caughtUp is set once Options.CaughtUp accepted an image (or at New
	// without one); held counts the changes coalesced before.
	// REQUIRES: notifyMu held.
	caughtUp bool
	held     int

	stop chan struct{} // closed by Close; stops the publisher
	done chan struct{} // closed when the publisher returned (nil: none)

	started  time.Time // opts.Now() at New; the session start of unseen brokers
	liveness struct {
		sync.Mutex
		lastSeen map[int32]time.Time
	}
}

// New builds the controller over opts.Quorum and opts.Machine, or over a
// replay of opts.Log, publishes what was applied so far and, with a
// Quorum, starts the goroutine that publishes changes committed by other
// nodes (stopped by Close).
func New(o Options) (*Controller, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	c := &Controller{opts: o, started: o.Now(), stop: make(chan struct{})}
	c.liveness.lastSeen = map[int32]time.Time{}
	switch {
	case o.Quorum != nil && o.Machine != nil:
		c.quorum, c.machine = o.Quorum, o.Machine
	case o.Log != nil:
		m, err := replayLog(o.Log, o.ClusterID, o.NodeID)
		if err != nil {
			return nil, err
		}
		c.machine, c.quorum = m, &logQuorum{log: o.Log, machine: m, nodeID: o.NodeID}
	default:
		return nil, fmt.Errorf("%w: need a Log, or a Quorum and its Machine", ErrOptions)
	}
	empty := c.machine.Empty()
	c.image.Store(empty)
	c.caughtUp = o.CaughtUp == nil
	c.notify()
	img := c.machine.Image()
	o.Logger.Info("controller: metadata loaded", "offset", img.Offset, "brokers", len(img.Brokers), "topics", len(img.Topics),
		"published_offset", c.Image().Offset)
	if o.Log == nil {
		c.done = make(chan struct{})
		go c.publish()
	}
	return c, nil
}

// replayLog applies every record of log to a new Machine, as one change.
func replayLog(log MetadataLog, clusterID string, nodeID int32) (*Machine, error) {
	m := NewMachine(clusterID, nodeID)
	b := newBuilder(m.Empty())
	next := int64(0)
	err := log.Replay(func(offset int64, rec Record) error {
		if offset != next {
			return fmt.Errorf("%w: replay offset %d, want %d", ErrCorrupt, offset, next)
		}
		next++
		if err := b.apply(rec); err != nil {
			return fmt.Errorf("offset %d: %w", offset, err)
		}
		b.img.Offset = offset
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("controller: replay metadata log: %w", err)
	}
	m.Restore(b.img)
	return m, nil
}

// logQuorum is a MetadataLog as a quorum of one: every Propose appends to
// the log and applies to the machine.
type logQuorum struct {
	log     MetadataLog
	machine *Machine
	nodeID  int32
}

func (q *logQuorum) Propose(base int64, recs []Record) error {
	if base != q.machine.Image().Offset {
		return fmt.Errorf("%w: batch decided at offset %d", ErrStale, base)
	}
	if _, err := q.log.Append(recs); errors.Is(err, ErrBatchTooLarge) {
		return err // refused before anything was written: the log is intact
	} else if err != nil {
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	return q.machine.Apply(base, recs)
}

func (q *logQuorum) Leading() bool   { return true }
func (q *logQuorum) LeaderID() int32 { return q.nodeID }

// publish delivers changes committed elsewhere until Close.
func (c *Controller) publish() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.machine.pending:
			c.notify()
		}
	}
}

// Close stops the publisher goroutine. The Quorum and Log are closed by
// their owner.
func (c *Controller) Close() {
	select {
	case <-c.stop:
		return
	default:
	}
	close(c.stop)
	if c.done != nil {
		<-c.done
	}
}

// Image returns the current metadata snapshot. It never blocks. It includes
// every change whose OnChange call has returned, and none whose OnChange has
// not started.
func (c *Controller) Image() *Image { return c.image.Load() }

// ActiveController is the node id of the active controller (-1 when the
// quorum has none right now).
func (c *Controller) ActiveController() int32 { return c.quorum.LeaderID() }

// Leading reports whether this node is the active controller (writes
// succeed here; elsewhere they are forwarded or answer NOT_CONTROLLER).
func (c *Controller) Leading() bool { return c.quorum.Leading() }

// notify delivers applied changes to OnChange in log order and publishes
// each image once its OnChange returned. Whoever holds notifyMu drains the
// whole queue, so when notify returns, every change applied before the
// call has been delivered and published.
func (c *Controller) notify() {
	c.notifyMu.Lock()
	defer c.notifyMu.Unlock()
	for {
		ch, ok := c.machine.pop()
		if !ok {
			return
		}
		if !c.caughtUp {
			if !c.opts.CaughtUp(ch.next) {
				c.held++
				continue
			}
			c.caughtUp = true
			ch.prev = c.image.Load()
			c.opts.Logger.Info("controller: metadata caught up with the quorum; publishing",
				"offset", ch.next.Offset, "coalesced_changes", c.held, "since_start", c.opts.Now().Sub(c.started).Round(time.Millisecond))
		}
		if c.opts.OnChange != nil {
			c.deliver(ch)
		}
		c.image.Store(ch.next)
	}
}

// write runs decide against the newest applied image and commits its
// records unless dryRun. decide returns the records; it may also record
// results in its closure. On a node that is not the active controller,
// decide still runs (so callers have results to fill in) but nothing is
// committed and the error wraps ErrNotController.
func (c *Controller) write(dryRun bool, decide func(img *Image) []Record) error {
	c.writeMu.Lock()
	err := c.writeLocked(dryRun, decide)
	c.writeMu.Unlock()
	c.notify()
	return err
}

// writeIfNeeded is write for a decision that mostly changes nothing, as a
// broker heartbeat's report of its cordoned and offline log directories:
// decide first runs on the current image without writeMu, and only a
// decision that writes records (or a node that does not lead, which write
// answers ErrNotController) takes it. writeMu is held by every write
// until its records commit, so heartbeats that always took it waited
// behind each CreateTopics, DeleteTopics and AlterPartition of the
// cluster: under load past their timeout, and a live broker was fenced
// (Kafka's controller handles a heartbeat in its event queue without
// waiting for earlier writes to commit). decide may run twice; it must
// only read the image it is given.
func (c *Controller) writeIfNeeded(decide func(img *Image) []Record) error {
	if c.quorum.Leading() && len(decide(c.machine.Image())) == 0 {
		return nil
	}
	return c.write(false, decide)
}

// REQUIRES: c.writeMu held.
func (c *Controller) writeLocked(dryRun bool, decide func(img *Image) []Record) error {
	leading := c.quorum.Leading()
	img := c.machine.Image()
	recs := decide(img)
	if c.elr(img).enabled() {
		recs = append(recs, elrClears(img, recs)...)
	}
	recs = markUncleanElections(img, recs)
	if !leading {
		return ErrNotController
	}
	if dryRun || len(recs) == 0 {
		return nil
	}
	if c.failed != nil {
		return c.failed
	}
	// Apply before proposing so that a record the image rejects never
	// reaches the log, where every replica would have to reject it again.
	if _, err := applyBatch(img, img.Offset+1, recs); err != nil {
		return fmt.Errorf("controller: decision produced bad records: %w", err)
	}
	err := c.quorum.Propose(img.Offset, recs)
	if errors.Is(err, ErrLogFailed) {
		c.failed = err
		c.opts.Logger.Error("controller: metadata log append failed; refusing further changes", "err", err)
	}
	return err
}

// overrides reports whether a commit failure replaces a result's code: it
// replaces success, and on a node that is not the active controller it
// replaces every code (the decision read an image that may be stale; the
// client retries on the active controller).
func overrides(code int16, err error) bool {
	return code == 0 || errors.Is(err, ErrNotController)
}

// failResults gives the code of a commit failure err (none when nil) to
// every result that had not failed on its own, and to every one on
// NOT_CONTROLLER; fields returns a result's error code and message.
func failResults[R any](results []R, err error, fields func(*R) (*int16, *string)) {
	if err == nil {
		return
	}
	code, msg := errorCode(err)
	for i := range results {
		if c, m := fields(&results[i]); overrides(*c, err) {
			*c, *m = code, msg
		}
	}
}

// errorCode maps a commit failure to a Kafka error for the client.
func errorCode(err error) (int16, string) {
	if errors.Is(err, ErrBatchTooLarge) {
		return kerr.PolicyViolation.Code, msgBatchTooLarge
	}
	if errors.Is(err, ErrNotController) || errors.Is(err, ErrStale) {
		return kerr.NotController.Code, err.Error()
	}
	if errors.Is(err, ErrLogFailed) {
		return kerr.KafkaStorageError.Code, err.Error()
	}
	return kerr.UnknownServerError.Code, err.Error()
}

// RegisterBroker registers (or re-registers) a broker. The local broker
// calls it at start with its advertised listener. It is
// RegisterIncarnation with no previous epoch.
func (c *Controller) RegisterBroker(b Broker) error { return c.RegisterIncarnation(b, -1) }

// RegisterIncarnation registers (or re-registers) a broker whose process
// recorded previousEpoch, its broker epoch, at its last clean shutdown
// (-1 for none: a first start, or a crash). With eligible leader replicas
// a new incarnation that does not bring its current epoch leaves every
// ISR and ELR (decideRegisterBroker).
func (c *Controller) RegisterIncarnation(b Broker, previousEpoch int64) error {
	if b.ID < 0 || b.Host == "" || b.Port <= 0 || b.Port > 65535 {
		return fmt.Errorf("%w: id %d host %q port %d", ErrInvalidBroker, b.ID, b.Host, b.Port)
	}
	for _, l := range b.Listeners {
		if l.Name == "" || l.Host == "" || l.Port <= 0 || l.Port > 65535 {
			return fmt.Errorf("%w: id %d listener %q host %q port %d", ErrInvalidBroker, b.ID, l.Name, l.Host, l.Port)
		}
	}
	c.liveness.Lock()
	c.liveness.lastSeen[b.ID] = c.opts.Now()
	c.liveness.Unlock()
	return c.write(false, func(img *Image) []Record {
		return decideRegisterBroker(img, b, previousEpoch, c.opts.UncleanLeaderElection, c.elr(img))
	})
}

// FenceBroker fences (or unfences) a registered broker and moves
// leadership accordingly (see decideFenceBroker). Fenced brokers get no new
// replicas.
func (c *Controller) FenceBroker(id int32, fenced bool) error {
	var known bool
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		known, recs = decideFenceBroker(img, id, fenced, c.opts.UncleanLeaderElection, c.elr(img))
		return recs
	})
	if !known {
		return fmt.Errorf("%w: broker %d is not registered", ErrInvalidBroker, id)
	}
	return err
}

// AlterPartition applies a leader's ISR change. It returns the partition
// state after the call (the current state when the change is refused, so a
// stale leader learns the new epochs), and a kerr code.
func (c *Controller) AlterPartition(req AlterPartition) (Partition, int16, string) {
	return c.AlterPartitionRecovery(req, LeaderRecovered)
}

// ElectLeaders runs a preferred or unclean leader election for the given
// partitions (Kafka's ElectLeaders); results are in request order.
func (c *Controller) ElectLeaders(typ ElectionType, partitions []TopicPartition) []ElectLeaderResult {
	var results []ElectLeaderResult
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		results, recs = decideElectLeaders(img, typ, partitions, c.elr(img))
		return recs
	})
	failResults(results, err, func(r *ElectLeaderResult) (*int16, *string) { return &r.ErrorCode, &r.ErrorMessage })
	return results
}

func (c *Controller) rules(internal bool) topicRules {
	return topicRules{
		defaultPartitions: c.opts.DefaultPartitions,
		defaultRF:         c.opts.DefaultReplicationFactor,
		validateConfig:    c.opts.ValidateTopicConfig,
		allowInternal:     internal,
		maxPartitions:     c.opts.MaxPartitions,
	}
}

// DefaultPartitions is the partition count of a topic created with
// NumPartitions -1 (Options.DefaultPartitions, at least 1).
func (c *Controller) DefaultPartitions() int32 { return max(c.opts.DefaultPartitions, 1) }

// CreateTopics creates topics with Kafka's validation rules; the results are
// in request order. All successful topics are committed with one Append.
// A failure of the whole request (see CreateTopicsRequest) is reported in
// every result.
func (c *Controller) CreateTopics(reqs []CreateTopic, validateOnly bool) []CreateTopicResult {
	results, _ := c.CreateTopicsRequest(reqs, validateOnly)
	return results
}

// CreateTopicsRequest is CreateTopics that also returns a failure of the
// whole request (Kafka's per-request limits), which the caller must give
// to every topic of the request, also those it did not pass here. The
// per-request partition limit is checked before the write lock is taken.
func (c *Controller) CreateTopicsRequest(reqs []CreateTopic, validateOnly bool) ([]CreateTopicResult, *RequestError) {
	if rerr := CheckCreateTopicsPartitions(reqs, c.opts.DefaultPartitions); rerr != nil {
		return requestFailed(reqs, rerr), rerr
	}
	var (
		results []CreateTopicResult
		rerr    *RequestError
	)
	err := c.write(validateOnly, func(img *Image) []Record {
		var recs []Record
		results, recs, rerr = decideCreateTopics(img, reqs, c.rules(false), c.opts.Rand)
		return recs
	})
	if err != nil {
		code, msg := errorCode(err)
		for i := range results {
			if overrides(results[i].ErrorCode, err) {
				results[i] = CreateTopicResult{Name: results[i].Name, ErrorCode: code, ErrorMessage: msg, NumPartitions: -1, ReplicationFactor: -1}
			}
		}
	}
	if errors.Is(err, ErrNotController) {
		rerr = nil // a verdict on a possibly stale image; NOT_CONTROLLER stands
	}
	return results, rerr
}

// CreateInternalTopic creates an internal topic such as __consumer_offsets.
// It is idempotent: if the topic exists its id is returned. Kafka errors are
// returned wrapping the kerr error, so errors.Is(err, kerr.InvalidReplicationFactor)
// works.
func (c *Controller) CreateInternalTopic(name string, partitions int32, rf int16, configs map[string]string) (Uuid, error) {
	var res CreateTopicResult
	err := c.write(false, func(img *Image) []Record {
		if t := img.Topics[name]; t != nil {
			res = CreateTopicResult{Name: name, ID: t.ID}
			return nil
		}
		results, recs, _ := decideCreateTopics(img, []CreateTopic{{Name: name, NumPartitions: partitions, ReplicationFactor: rf, Configs: configs}}, c.rules(true), c.opts.Rand)
		res = results[0]
		return recs
	})
	if err != nil {
		return Uuid{}, fmt.Errorf("controller: create internal topic %q: %w", name, err)
	}
	if res.ErrorCode != 0 {
		return Uuid{}, fmt.Errorf("controller: create internal topic %q: %w: %s", name, kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
	}
	return res.ID, nil
}

// DeleteTopics deletes topics by name and by id; results list the names
// first, then the ids, each in request order.
func (c *Controller) DeleteTopics(names []string, ids []Uuid) []DeleteTopicResult {
	var results []DeleteTopicResult
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		results, recs = decideDeleteTopics(img, names, ids)
		return recs
	})
	failResults(results, err, func(r *DeleteTopicResult) (*int16, *string) { return &r.ErrorCode, &r.ErrorMessage })
	return results
}

// CreatePartitions grows topic to count partitions. assignment, if non-nil,
// gives the replicas of each new partition.
func (c *Controller) CreatePartitions(topic string, count int32, assignment [][]int32, validateOnly bool) (code int16, msg string) {
	results, _ := c.CreatePartitionsRequest([]CreatePartitionsTopic{{Topic: topic, Count: count, Assignment: assignment}}, validateOnly)
	return results[0].ErrorCode, results[0].ErrorMessage
}

// CreatePartitionsRequest grows every topic of one CreatePartitions request
// (names must be distinct) and commits the records of all successful
// topics with one Append, as Kafka does. Results are in request order. A
// failure of the whole request (Kafka's per-request limits, checked before
// anything is placed, also for validateOnly) is returned too; the caller
// gives it to every topic of the request.
func (c *Controller) CreatePartitionsRequest(reqs []CreatePartitionsTopic, validateOnly bool) ([]CreatePartitionsResult, *RequestError) {
	var (
		results []CreatePartitionsResult
		rerr    *RequestError
	)
	err := c.write(validateOnly, func(img *Image) []Record {
		var recs []Record
		results, recs, rerr = decideCreatePartitionsBatch(img, reqs, c.opts.MaxPartitions, c.opts.Rand)
		return recs
	})
	failResults(results, err, func(r *CreatePartitionsResult) (*int16, *string) { return &r.ErrorCode, &r.ErrorMessage })
	if errors.Is(err, ErrNotController) {
		rerr = nil // a verdict on a possibly stale image; NOT_CONTROLLER stands
	}
	return results, rerr
}

// AlterTopicConfigs applies incremental config operations to a topic's
// overrides and validates the resulting map.
func (c *Controller) AlterTopicConfigs(topic string, ops []ConfigOp, validateOnly bool) (code int16, msg string) {
	return c.alterTopic(topic, validateOnly, func(current map[string]string) (map[string]string, int16, string) {
		return applyConfigOps(current, ops, c.opts.TopicConfigDefault)
	})
}

// SetTopicConfigs replaces all of a topic's overrides (the legacy
// AlterConfigs semantics).
func (c *Controller) SetTopicConfigs(topic string, configs map[string]string, validateOnly bool) (code int16, msg string) {
	return c.alterTopic(topic, validateOnly, func(map[string]string) (map[string]string, int16, string) {
		return cloneMap(configs), 0, ""
	})
}

func (c *Controller) alterTopic(topic string, validateOnly bool, compute func(map[string]string) (map[string]string, int16, string)) (code int16, msg string) {
	err := c.write(validateOnly, func(img *Image) []Record {
		t := img.Topics[topic]
		if t == nil {
			code, msg = kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Description
			return nil
		}
		next, ccode, cmsg := compute(t.Configs)
		if ccode != 0 {
			code, msg = ccode, cmsg
			return nil
		}
		var recs []Record
		code, msg, recs = decideTopicConfigs(img, topic, next, c.opts.ValidateTopicConfig)
		return recs
	})
	if err != nil && overrides(code, err) {
		return errorCode(err)
	}
	return code, msg
}

// AlterGroupConfigs applies incremental config operations to a group's
// config overrides (resource type GROUP). validate, if non-nil, checks the
// resulting map. A group needs not exist, as in Kafka.
func (c *Controller) AlterGroupConfigs(group string, ops []ConfigOp, validateOnly bool, validate func(map[string]string) (int16, string)) (code int16, msg string) {
	return c.alterConfigResource(ConfigResourceGroup, group, func(img *Image) map[string]map[string]string { return img.GroupConfigs },
		ops, validateOnly, validate)
}

// AlterClientMetrics applies config operations to a client metrics
// subscription (resource type CLIENT_METRICS, KIP-714). validate, if
// non-nil, checks the resulting map. Setting a config of a subscription
// that does not exist creates it; deleting its last config removes it.
func (c *Controller) AlterClientMetrics(name string, ops []ConfigOp, validateOnly bool, validate func(map[string]string) (int16, string)) (code int16, msg string) {
	return c.alterConfigResource(ConfigResourceClientMetrics, name, func(img *Image) map[string]map[string]string { return img.ClientMetrics },
		ops, validateOnly, validate)
}

// alterConfigResource applies ops to the configs of resource name of type
// typ, which configsOf finds in an image, and commits the difference.
func (c *Controller) alterConfigResource(typ int8, name string, configsOf func(*Image) map[string]map[string]string, ops []ConfigOp,
	validateOnly bool, validate func(map[string]string) (int16, string)) (code int16, msg string) {
	err := c.write(validateOnly, func(img *Image) []Record {
		current := configsOf(img)[name]
		next, ccode, cmsg := applyConfigOps(current, ops, nil)
		if ccode != 0 {
			code, msg = ccode, cmsg
			return nil
		}
		if validate != nil {
			if code, msg = validate(next); code != 0 {
				return nil
			}
		}
		return configDiff(typ, name, current, next)
	})
	if err != nil && overrides(code, err) {
		return errorCode(err)
	}
	return code, msg
}

// AlterBrokerConfigs applies incremental config operations to a broker's
// dynamic configs ("" = cluster default). validate, if non-nil, checks the
// resulting map. With eligible leader replicas, a broker's own
// min.insync.replicas cannot be altered nor the cluster-level one removed
// (INVALID_CONFIG, cluster_min_isr.go).
func (c *Controller) AlterBrokerConfigs(broker string, ops []ConfigOp, validateOnly bool, validate func(map[string]string) (int16, string)) (code int16, msg string) {
	if code, msg := validBrokerResource(broker); code != 0 {
		return code, msg
	}
	err := c.write(validateOnly, func(img *Image) []Record {
		current := img.BrokerConfigs[broker]
		next, ccode, cmsg := applyConfigOps(current, ops, nil)
		if ccode != 0 {
			code, msg = ccode, cmsg
			return nil
		}
		if c.elr(img).enabled() {
			if code, msg = checkMinISRAlter(broker, ops); code != 0 {
				return nil
			}
		}
		if validate != nil {
			if code, msg = validate(next); code != 0 {
				return nil
			}
		}
		return configDiff(ConfigResourceBroker, broker, current, next)
	})
	if err != nil && overrides(code, err) {
		return errorCode(err)
	}
	return code, msg
}
