package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/txn"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/wire"
)

// This file is the broker's side of the cluster: registration and
// heartbeats with the active controller, the duties of the active
// controller (fencing brokers whose session ran out, creating the internal
// topics once enough brokers exist), forwarding metadata changes to the
// active controller, and coordinators that follow leadership of their
// internal partitions. Every call to the controller goes to the local
// Controller when this node is the active controller, and over the
// controller channel otherwise, so one node is no special case.

// retryBackoff is the pause between attempts of a controller call that
// failed because the controller moved or is being elected.
const retryBackoff = 100 * time.Millisecond

// registrationTimeout bounds how long a starting node tries to register
// (Kafka's initial.broker.registration.timeout.ms default).
const registrationTimeout = 60 * time.Second

// leaderOf returns the active controller's id and controller address.
// A broker-only node that has not been added to the quorum yet knows no
// leader: it then tries the voters in turn (a voter that is not the active
// controller answers NOT_CONTROLLER, and the next call tries the next),
// or, configured with controller.quorum.bootstrap.servers alone, those
// (bootstrap_join.go).
func (n *Node) leaderOf() (int32, string) {
	if id := n.quorum.LeaderID(); id >= 0 || n.cfg.HasRole("controller") {
		return id, n.quorum.LeaderAddr()
	}
	voters := n.cfg.QuorumVoters
	if len(voters) == 0 {
		return n.bootstrapController()
	}
	v := voters[int(n.voterTurn.Add(1))%len(voters)]
	return v.ID, v.Addr()
}

// addObserver adds a broker-only node to the metadata quorum as a
// non-voter when it registers with this, the active controller.
func (n *Node) addObserver(id int32, addr string) error {
	for _, v := range n.cfg.QuorumVoters {
		if v.ID == id {
			return nil // a voter already gets the log
		}
	}
	if len(n.cfg.QuorumVoters) < 2 && !n.cfg.HasRole("controller") {
		return nil
	}
	return n.quorum.AddObserver(id, addr)
}

// brokerOnlyListener returns the bind address and the advertised listener
// of a broker-only node: the first advertised listener that is not a
// controller listener, bound as the listener of the same name. Its port
// must be given (other nodes dial it for Raft before it could tell them a
// port picked at start).
func brokerOnlyListener(cfg *config.Config) (string, config.Listener, error) {
	adv := advertised(cfg, nil, nil)[0]
	if adv.Port == 0 {
		return "", adv, fmt.Errorf("broker-only node: advertised listener %s needs a port", adv.Name)
	}
	for _, l := range cfg.Listeners {
		if strings.EqualFold(l.Name, adv.Name) {
			return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)), adv, nil
		}
	}
	return "", adv, fmt.Errorf("broker-only node: advertised listener %s is not in listeners", adv.Name)
}

// retryable reports whether a controller call may succeed when retried:
// the active controller moved, is being elected, or cannot be reached.
func retryable(err error) bool {
	return errors.Is(err, controller.ErrNotController) || errors.Is(err, ErrNoController) ||
		errors.Is(err, kerr.NotController) || errors.As(err, new(net.Error)) || errors.Is(err, errRemote)
}

var errRemote = errors.New("broker: the controller's answer")

// withController runs local when this node is the active controller and
// remote otherwise, retrying while the controller moves, until ctx ends.
func (n *Node) withController(ctx context.Context, local func() error, remote func(ctx context.Context) error) error {
	for {
		var err error
		if n.quorum.Leading() {
			err = local()
		} else {
			err = remote(ctx)
		}
		if err == nil || !retryable(err) {
			return err
		}
		t := time.NewTimer(retryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// kafkaErr turns a response error code into an error (nil for 0).
func kafkaErr(code int16) error {
	if code == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", errRemote, kerr.ErrorForCode(code))
}

// register registers this broker with the active controller.
func (n *Node) register(ctx context.Context) error {
	b := controller.Broker{ID: n.cfg.NodeID, Host: n.adv.Host, Port: int32(n.adv.Port), Listeners: brokerListeners(n.advs),
		Incarnation: n.incarnation.String(), LogDirs: n.dirFailures.onlineIDs()}
	if n.cfg.BrokerRack != "" {
		rack := n.cfg.BrokerRack
		b.Rack = &rack
	}
	return n.withController(ctx, func() error {
		if n.ctrl == nil {
			return controller.ErrNotController
		}
		if old, ok := n.ctrl.Image().Brokers[b.ID]; ok {
			b.Fenced = old.Fenced
		}
		if err := n.ctrl.RegisterIncarnation(b, n.previousEpoch); err != nil {
			return err
		}
		n.brokerEpoch.Store(n.ctrl.Image().Brokers[b.ID].Epoch)
		return n.ctrl.Heartbeat(b.ID)
	}, func(ctx context.Context) error {
		req := kmsg.NewPtrBrokerRegistrationRequest()
		req.BrokerID, req.ClusterID, req.Rack = b.ID, n.clusterID, b.Rack
		req.IncarnationID = n.incarnation
		req.PreviousBrokerEpoch = n.previousEpoch // v3+
		req.Listeners = registrationListeners(n.advs)
		for _, id := range b.LogDirs {
			req.LogDirs = append(req.LogDirs, id) // v2+
		}
		resp, err := n.lifecycle.Request(ctx, req, 3)
		if err != nil {
			return err
		}
		rr := resp.(*kmsg.BrokerRegistrationResponse)
		if err := kafkaErr(rr.ErrorCode); err != nil {
			return err
		}
		n.brokerEpoch.Store(rr.BrokerEpoch)
		return n.heartbeat(ctx, false)
	})
}

// waitRegistered waits until this node's image holds its registration
// (committed at the active controller, it reaches this node's image a
// moment later), so that the node never answers Metadata without itself,
// and until the broker is unfenced: a registration starts fenced and a
// heartbeat sent once the image holds it is caught up and unfences it
// (Kafka's brokers also wait to be unfenced before they serve). It checks
// every 10 ms: the image has no per-offset notification.
func (n *Node) waitRegistered(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	var lastHeartbeat time.Time
	for {
		if b, ok := n.ctrl.Image().Brokers[n.cfg.NodeID]; ok && b.Host == n.adv.Host && b.Port == int32(n.adv.Port) && slices.Equal(b.Listeners, brokerListeners(n.advs)) {
			if !b.Fenced {
				return nil
			}
			if time.Since(lastHeartbeat) >= 100*time.Millisecond {
				lastHeartbeat = time.Now()
				if err := n.heartbeat(ctx, false); err != nil && ctx.Err() == nil {
					n.logger.Warn("heartbeat after registration failed", "err", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for this broker's registration to reach its metadata: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// heartbeat sends one heartbeat (or, with shutdown, a request to move
// this broker's leaderships away) to the active controller.
func (n *Node) heartbeat(ctx context.Context, shutdown bool) error {
	id := n.cfg.NodeID
	if n.quorum.Leading() {
		if shutdown {
			return n.ctrl.FenceBroker(id, true)
		}
		if _, ok := n.ctrl.Image().Brokers[id]; !ok {
			// Unregistered (UnregisterBroker) while running: register
			// again, as a remote broker answered BROKER_ID_NOT_REGISTERED
			// does below.
			return n.register(ctx)
		}
		if err := n.ctrl.Heartbeat(id); err != nil {
			return err
		}
		if err := n.reportCordonedLocally(); err != nil {
			return err
		}
		return n.reportOfflineDirsLocally()
	}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch, req.WantShutdown = id, n.brokerEpoch.Load(), shutdown
	req.CurrentMetadataOffset = -1
	for _, dir := range n.dirFailures.offlineIDs() {
		req.OfflineLogDirs = append(req.OfflineLogDirs, dir)
	}
	cordoned := n.cfg.CordonedLogDirs
	if n.ctrl != nil {
		cordoned, _ = cordonedPaths(n.ctrl.Image(), n.cfg)
	}
	for _, dir := range n.dirFailures.cordonedIDs(cordoned) {
		req.CordonedLogDirs = append(req.CordonedLogDirs, dir) // v2+, never nil: empty uncordons
	}
	if req.CordonedLogDirs == nil {
		req.CordonedLogDirs = [][16]byte{}
	}
	if n.ctrl != nil {
		req.CurrentMetadataOffset = n.ctrl.Image().Offset
	}
	resp, err := n.lifecycle.Request(ctx, req, 2)
	if err != nil {
		return err
	}
	hb := resp.(*kmsg.BrokerHeartbeatResponse)
	if hb.ErrorCode == kerr.BrokerIDNotRegistered.Code || hb.ErrorCode == kerr.StaleBrokerEpoch.Code {
		// A new active controller restored from a snapshot taken before
		// this broker registered cannot miss it (registrations are
		// records), so this is a broker the cluster forgot, or one whose
		// registration this process did not see answered (STALE: a
		// registration of this incarnation was committed, the answer
		// lost): register again (the same incarnation gets its epoch).
		return n.register(ctx)
	}
	return kafkaErr(hb.ErrorCode)
}

// heartbeatTimeout bounds one heartbeat to the active controller: twice
// broker.heartbeat.interval.ms, at most controller.socket.timeout.ms.
// Kafka 4.4's broker is stricter: its lifecycle channel's request timeout
// is min(controller.socket.timeout.ms, broker.heartbeat.interval.ms)
// (BrokerServer's "heartbeat" NodeToControllerChannelManagerImpl, javap);
// a heartbeat not answered by then is retried until that window ends, then
// sent again one interval later (BrokerLifecycleManager.
// scheduleNextCommunicationAfterFailure). What keeps its brokers unfenced
// under load is that the heartbeat has a connection of its own (lifecycle)
// and the controller counts it when it handles it, answered in time or
// not (QuorumController touches the broker for a heartbeat that timed out
// in its queue); samsa's controller counts it on arrival too.
func heartbeatTimeout(cfg *config.Config) time.Duration {
	return time.Duration(min(2*int64(cfg.BrokerHeartbeatIntervalMs), controllerSocketTimeoutMs)) * time.Millisecond
}

// controllerSocketTimeoutMs is controller.socket.timeout.ms, read-only in
// Kafka 4.4 (default 30000).
const controllerSocketTimeoutMs = 30000

// heartbeatLoop heartbeats every broker.heartbeat.interval.ms until ctx
// ends, and, while this node is the active controller, fences brokers
// whose session ran out and creates the internal topics once enough
// brokers are registered.
func (n *Node) heartbeatLoop(ctx context.Context) {
	interval := time.Duration(n.cfg.BrokerHeartbeatIntervalMs) * time.Millisecond
	// The controller's duties run at least every second: fencing must not
	// wait for a long heartbeat interval.
	t := time.NewTicker(min(interval, time.Second))
	defer t.Stop()
	last := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		select {
		case <-n.stopping:
			return // a heartbeat now would undo the controlled shutdown
		default:
		}
		if n.cfg.HasRole("broker") && time.Since(last) >= interval {
			hctx, cancel := context.WithTimeout(ctx, heartbeatTimeout(n.cfg))
			if err := n.heartbeat(hctx, false); err != nil && ctx.Err() == nil {
				n.logger.Warn("heartbeat to the active controller failed", "err", err)
			} else {
				last = time.Now()
			}
			cancel()
		}
		if n.quorum.Leading() {
			n.controllerDuties()
		} else {
			n.lastUncleanCheck = time.Time{}
		}
	}
}

// controllerDuties is what the active controller does on its ticker.
func (n *Node) controllerDuties() {
	fenced, err := n.ctrl.ExpireSessions()
	if err != nil {
		n.logger.Warn("cannot fence brokers whose session expired", "err", err)
	}
	for _, id := range fenced {
		n.logger.Warn("fenced broker: no heartbeat within broker.session.timeout.ms", "broker", id, "timeout_ms", n.cfg.BrokerSessionTimeoutMs)
	}
	n.ensureClusterMinISR()
	n.ensureInternalTopics()
	n.electUnclean(time.Now())
	n.balanceLeaders(time.Now())
	n.sweepDelegationTokens(time.Now())
}

// uncleanCheckDue reports whether the periodic unclean elections are due
// at now, given the last check (zero: this node just became the active
// controller, which starts the interval) and the interval; it returns the
// time to keep as the last check.
func uncleanCheckDue(last, now time.Time, interval time.Duration) (bool, time.Time) {
	if last.IsZero() {
		return false, now
	}
	if now.Sub(last) < interval {
		return false, last
	}
	return true, now
}

// electUnclean elects unclean leaders of the leaderless partitions whose
// topic allows it (unclean.leader.election.enable) every
// unclean.leader.election.interval.ms, the first time one interval after
// this node became the active controller, as Kafka 4.4's controller does
// (its periodic task electUnclean, ReplicationControlManager.
// maybeElectUncleanLeaders). A broker fenced or registering again is
// elected for at once by the controller's fencing decisions; this check
// catches the partitions whose topic allowed unclean election only later.
func (n *Node) electUnclean(now time.Time) {
	due, last := uncleanCheckDue(n.lastUncleanCheck, now, time.Duration(n.cfg.UncleanLeaderElectionIntervalMs)*time.Millisecond)
	n.lastUncleanCheck = last
	if !due {
		return
	}
	if elected, err := n.ctrl.ElectUnclean(); err != nil {
		n.logger.Warn("cannot run unclean leader elections", "err", err)
	} else if elected > 0 {
		n.logger.Warn("unclean leader election: out-of-sync replicas became leaders (unclean.leader.election.enable)", "partitions", elected)
	}
}

// sweepDelegationTokens removes expired delegation tokens from the
// metadata every delegation.token.expiry.check.interval.ms (the first
// time one interval after this node became active), as Kafka's active
// controller does; with tokens disabled there is nothing to do.
func (n *Node) sweepDelegationTokens(now time.Time) {
	if !n.cfg.DelegationTokens.Enabled() {
		return
	}
	interval := time.Duration(n.cfg.DelegationTokens.ExpiryCheckIntervalMs) * time.Millisecond
	if n.lastTokenSweep.IsZero() {
		n.lastTokenSweep = now
	}
	if now.Sub(n.lastTokenSweep) < interval {
		return
	}
	n.lastTokenSweep = now
	removed, err := n.ctrl.SweepExpiredDelegationTokens(now)
	for _, t := range removed {
		n.logger.Info("delegation token expired", "token_id", t.TokenID, "owner", t.Owner)
	}
	if err != nil {
		n.logger.Warn("cannot remove expired delegation tokens", "err", err)
	}
}

// ensureClusterMinISR gives the metadata the cluster-wide
// min.insync.replicas that eligible leader replicas require, from this
// node's static min.insync.replicas, when it has none (a fresh cluster,
// or a metadata log of an older samsa; controller/cluster_min_isr.go).
// Only the active controller calls it.
func (n *Node) ensureClusterMinISR() {
	if _, err := n.ctrl.EnsureClusterMinISR(n.cfg.MinInsyncReplicas); err != nil {
		n.logger.Warn("cannot write the cluster-level min.insync.replicas yet", "err", err)
	}
}

// balanceLeaders moves leadership back to the preferred replicas every
// leader.imbalance.check.interval.seconds when auto.leader.rebalance.enable
// is set (the first time one interval after this node became active).
func (n *Node) balanceLeaders(now time.Time) {
	if !n.cfg.AutoLeaderRebalanceEnable {
		return
	}
	interval := time.Duration(n.cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second
	if n.lastLeaderBalance.IsZero() {
		n.lastLeaderBalance = now
		return
	}
	if now.Sub(n.lastLeaderBalance) < interval {
		return
	}
	n.lastLeaderBalance = now
	if moved, err := n.ctrl.BalanceLeaders(); err != nil {
		n.logger.Warn("cannot balance partition leaders", "err", err)
	} else if moved > 0 {
		n.logger.Info("moved partition leaders back to their preferred replicas", "partitions", moved)
	}
}

// internalTopicRF is the replication factor the internal topics are
// created with (internalTopicReplication), and ok is false while fewer
// unfenced brokers exist: Kafka answers COORDINATOR_NOT_AVAILABLE until
// then, and so do we.
func (n *Node) internalTopicRF(configured int16) (int16, bool) {
	voters := len(n.cfg.QuorumVoters)
	if voters == 0 && len(n.cfg.QuorumBootstrapServers) == 0 {
		voters = 1 // no quorum settings at all: a quorum of one
	}
	rf := internalTopicReplication(configured, voters, n.cfg.HasRole("broker"))
	live := int16(len(n.ctrl.Image().UnfencedBrokers()))
	return rf, live >= rf
}

// internalTopicReplication is the configured replication factor of an
// internal topic, capped at the number of static voters when the active
// controller is also a broker and the voters are fewer (a single node with
// no quorum settings or one voter, a two-node test cluster), as a
// single-node quick start needs. A dynamic
// quorum (controller.quorum.bootstrap.servers, no static voter list) gets
// no cap: its first controller starts alone and the others join later, so
// its voter count says nothing about the cluster's size, and Kafka, which
// never caps, waits for enough brokers.
func internalTopicReplication(configured int16, staticVoters int, combined bool) int16 {
	if staticVoters > 0 && combined && configured > int16(staticVoters) {
		return int16(staticVoters)
	}
	return configured
}

// ensureInternalTopics creates __consumer_offsets and __transaction_state
// when they do not exist and enough brokers are unfenced. Only the active
// controller calls it.
func (n *Node) ensureInternalTopics() {
	cfg := n.cfg
	img := n.ctrl.Image()
	if img.Topics[coordinator.OffsetsTopic] == nil {
		if rf, ok := n.internalTopicRF(cfg.OffsetsTopicReplicationFactor); ok {
			if _, err := n.ctrl.CreateInternalTopic(coordinator.OffsetsTopic, cfg.OffsetsTopicNumPartitions, rf,
				map[string]string{"cleanup.policy": "compact", "compression.type": "producer", "segment.bytes": "104857600"}); err != nil {
				n.logger.Warn("cannot create the offsets topic yet", "topic", coordinator.OffsetsTopic, "err", err)
			}
		}
	}
	if img.Topics[txn.TransactionStateTopic] == nil {
		if rf, ok := n.internalTopicRF(cfg.TransactionStateLogReplicationFactor); ok {
			if _, err := n.ctrl.CreateInternalTopic(txn.TransactionStateTopic, cfg.TransactionStateLogNumPartitions, rf,
				map[string]string{"cleanup.policy": "compact", "compression.type": "uncompressed",
					"segment.bytes":       fmt.Sprint(cfg.TransactionStateLogSegmentBytes),
					"min.insync.replicas": fmt.Sprint(min(cfg.TransactionStateLogMinISR, int32(rf)))}); err != nil {
				n.logger.Warn("cannot create the transaction state topic yet", "topic", txn.TransactionStateTopic, "err", err)
			}
		}
	}
}

// forward sends a request that changes cluster metadata to the active
// controller when that is another node (Server Options.Forward). As
// Kafka's forwarding channel (NodeToControllerRequestThread), it waits
// for an active controller while none is known (an election, a node
// still starting), and sends again when the controller moved (the
// Envelope answered NOT_CONTROLLER) or could not be reached, until
// controllerRequestTimeout; NOT_CONTROLLER inside the forwarded answer
// goes to the client as in Kafka. If this node becomes the active
// controller meanwhile, or the time runs out, the local handler answers
// (NOT_CONTROLLER when it does not lead, which clients retry).
func (n *Node) forward(frame []byte, principal, clientHost string) ([]byte, bool) {
	if namesOtherBroker(frame, n.cfg.NodeID) {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), controllerRequestTimeout)
	defer cancel()
	for {
		if n.quorum.Leading() {
			return nil, false
		}
		out, err := n.channel.ForwardEnveloped(ctx, frame, principal, clientHost)
		if err == nil {
			return out, true
		}
		if !retryable(err) && !errors.Is(err, kerr.NotController) {
			n.logger.Warn("cannot forward a request to the active controller; answering here", "err", err)
			return nil, false
		}
		t := time.NewTimer(retryBackoff)
		select {
		case <-ctx.Done():
			t.Stop()
			if !errors.Is(err, ErrNoController) {
				n.logger.Warn("cannot forward a request to the active controller; answering here", "err", err)
			}
			return nil, false
		case <-n.stopping:
			t.Stop()
			return nil, false
		case <-t.C:
		}
	}
}

// namesOtherBroker reports whether frame is an AlterConfigs or
// IncrementalAlterConfigs naming the BROKER resource of another node. As
// Kafka's brokers (ConfigAdminManager), the receiving node refuses those
// itself (INVALID_REQUEST "Unexpected node id") instead of forwarding
// them: the active controller cannot tell which node they were sent to.
// A BROKER_LOGGER resource (a node's log level) is answered likewise by
// the node that receives it, as Kafka does.
func namesOtherBroker(frame []byte, self int32) bool {
	_, req, err := wire.ParseRequest(frame)
	if err != nil {
		return false
	}
	other := func(typ kmsg.ConfigResourceType, name string) bool {
		if typ == kmsg.ConfigResourceTypeBrokerLogger {
			return true
		}
		return typ == kmsg.ConfigResourceTypeBroker && name != "" && name != strconv.Itoa(int(self))
	}
	switch req := req.(type) {
	case *kmsg.AlterConfigsRequest:
		for _, r := range req.Resources {
			if other(r.ResourceType, r.ResourceName) {
				return true
			}
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		for _, r := range req.Resources {
			if other(r.ResourceType, r.ResourceName) {
				return true
			}
		}
	}
	return false
}

// toController sends req to the active controller, or returns nil, nil
// when that is this node (the caller then uses the local Controller).
func (n *Node) toController(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if n.quorum.Leading() {
		return nil, nil
	}
	version, err := n.maxVersion(req)
	if err != nil {
		return nil, err
	}
	return n.channel.Request(ctx, req, version)
}

// maxVersion is the highest version of req's API this build serves: what
// another node of the same build accepts.
func (n *Node) maxVersion(req kmsg.Request) (int16, error) {
	e, ok := n.srv.table[req.Key()]
	if !ok {
		return 0, fmt.Errorf("broker: no version of %s to send", kmsg.NameForKey(req.Key()))
	}
	return e.MaxVersion, nil
}

// allocateProducerIDs takes a block of producer ids from the controller.
func (n *Node) allocateProducerIDs(floor int64) (first, size int64, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = n.withController(ctx, func() error {
		var err error
		first, size, err = n.ctrl.AllocateProducerIDs(n.cfg.NodeID, floor)
		return err
	}, func(ctx context.Context) error {
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = n.cfg.NodeID, -1
		resp, err := n.channel.Request(ctx, req, 0)
		if err != nil {
			return err
		}
		r := resp.(*kmsg.AllocateProducerIDsResponse)
		if err := kafkaErr(r.ErrorCode); err != nil {
			return err
		}
		first, size = r.ProducerIDStart, int64(r.ProducerIDLen)
		return nil
	})
	return first, size, err
}

// coordinatorReconciler loads and unloads the group, transaction and
// share coordinator shards so that this node serves exactly the internal
// partitions it leads in the newest image. It is level-triggered: a
// wake-up (coalesced) makes it compare that image with what it has
// loaded.
type coordinatorReconciler struct {
	nodeID int32
	logger *slog.Logger
	// published returns the controller's published image
	// (Controller.Image).
	published func() *controller.Image
	// delivered is the newest image the controller's OnChange delivered
	// (imageChanged). The controller publishes an image only once OnChange
	// returned, so a reconcile that OnChange's wake-up starts may run
	// before Image() has it: reading Image() alone, it reconciled with the
	// previous image and spent the wake-up, and a node that had just
	// become the leader of an internal partition answered NOT_COORDINATOR
	// for it until some later image came (TestSharePersisterFailover: 3
	// runs in about 115 under load).
	delivered atomic.Pointer[controller.Image]
	wake      chan struct{}

	mu          sync.Mutex
	groups      shardSet // __consumer_offsets partitions of the group coordinator
	txns        shardSet // __transaction_state partitions of the transaction coordinator
	shareStates shardSet // __share_group_state partitions of the share coordinator
}

// newCoordinatorReconciler builds the reconciler of n's coordinators; it
// reads n.ctrl, n.groups, n.txns and n.shareCoord when it runs, so they
// may be built later.
func newCoordinatorReconciler(n *Node) *coordinatorReconciler {
	r := &coordinatorReconciler{nodeID: n.cfg.NodeID, logger: n.logger, wake: make(chan struct{}, 1),
		published: func() *controller.Image { return n.ctrl.Image() }}
	r.groups.init(coordinator.OffsetsTopic, func() bool { return n.groups != nil },
		func(p int32) error { return n.groups.LoadPartition(p) }, func(p int32) { n.groups.UnloadPartition(p) })
	r.txns.init(txn.TransactionStateTopic, func() bool { return n.txns != nil },
		func(p int32) error { return n.txns.LoadPartition(p) }, func(p int32) { n.txns.UnloadPartition(p) })
	r.shareStates.init(share.StateTopic, func() bool { return n.shareCoord != nil },
		func(p int32) error { return n.shareCoord.LoadPartition(p) }, func(p int32) { n.shareCoord.UnloadPartition(p) })
	return r
}

// transactionCoordinatorEpoch is the coordinator epoch of a loaded
// __transaction_state partition (txn.Options.CoordinatorEpoch).
func (r *coordinatorReconciler) transactionCoordinatorEpoch(p int32) int32 {
	return r.txns.coordinatorEpoch(p)
}

// imageChanged is called by the controller's OnChange with each image it
// delivers, after the replica manager applied it and before the image is
// published: it records next for the reconcile it asks for. It never
// blocks.
func (r *coordinatorReconciler) imageChanged(next *controller.Image) {
	r.delivered.Store(next)
	r.notify()
}

// notify asks for a reconcile; it never blocks.
func (r *coordinatorReconciler) notify() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// image returns the newest image known: the last one delivered, or the
// published one when it is newer (or none was delivered).
func (r *coordinatorReconciler) image() *controller.Image {
	return newestImage(r.published(), r.delivered.Load())
}

// newestImage returns delivered, the last image OnChange delivered, unless
// published (Controller.Image) is newer or delivered is nil.
func newestImage(published, delivered *controller.Image) *controller.Image {
	if delivered != nil && (published == nil || delivered.Offset >= published.Offset) {
		return delivered
	}
	return published
}

// run reconciles on every wake-up until ctx ends.
func (r *coordinatorReconciler) run(ctx context.Context) {
	r.reconcile()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
			r.reconcile()
		}
	}
}

// ledPartitions returns the partitions of topic that node leads in img,
// with their leader epochs.
func ledPartitions(img *controller.Image, topic string, node int32) map[int32]int32 {
	out := map[int32]int32{}
	if t, ok := img.Topics[topic]; ok {
		for _, p := range t.Partitions {
			if p.Leader == node {
				out[p.Partition] = p.LeaderEpoch
			}
		}
	}
	return out
}

// shardChanges returns, in ascending order, the loaded partitions that
// are no longer led, or led in another leader epoch (to unload), and the
// led ones not loaded in their current epoch (to load). A node that lost
// and regained leadership between two reconciles reloads the shard, as
// Kafka reloads a coordinator partition at every leader epoch: the
// partition's log may have changed under another leader meanwhile.
func shardChanges(loaded, led map[int32]int32) (unload, load []int32) {
	for _, p := range sortedKeys(loaded) {
		if e, ok := led[p]; !ok || e != loaded[p] {
			unload = append(unload, p)
		}
	}
	for _, p := range sortedKeys(led) {
		if e, ok := loaded[p]; !ok || e != led[p] {
			load = append(load, p)
		}
	}
	return unload, load
}

// shardSet is one coordinator's loaded partitions of its internal topic.
type shardSet struct {
	topic string
	// enabled reports whether the coordinator exists (nil: it does); a
	// set whose coordinator does not is left alone.
	enabled func() bool
	// loaded maps each loaded partition to the leader epoch it was
	// loaded in. REQUIRES: the reconciler's mu.
	loaded map[int32]int32
	load   func(int32) error
	unload func(int32)
	// epochs is loaded for the shards themselves, which ask for their
	// coordinator epoch from their own goroutines: it has a lock of its
	// own because the reconciler holds its mu while an unload waits for
	// a shard to stop.
	epochs struct {
		sync.Mutex
		m map[int32]int32
	}
}

// init makes s the empty set of topic's shards, loaded and unloaded with
// load and unload while enabled (nil: always) reports true.
func (s *shardSet) init(topic string, enabled func() bool, load func(int32) error, unload func(int32)) {
	s.topic, s.enabled, s.load, s.unload = topic, enabled, load, unload
	s.loaded = map[int32]int32{}
	s.epochs.m = map[int32]int32{}
}

// coordinatorEpoch returns the leader epoch partition p was loaded in:
// the coordinator epoch of Kafka's transaction markers, which fences the
// markers of a coordinator that lost the partition
// (TRANSACTION_COORDINATOR_FENCED). -1 when it is not loaded.
func (s *shardSet) coordinatorEpoch(p int32) int32 {
	s.epochs.Lock()
	defer s.epochs.Unlock()
	if e, ok := s.epochs.m[p]; ok {
		return e
	}
	return -1
}

func (s *shardSet) setEpoch(p, epoch int32, loaded bool) {
	s.epochs.Lock()
	defer s.epochs.Unlock()
	if loaded {
		s.epochs.m[p] = epoch
	} else {
		delete(s.epochs.m, p)
	}
}

// follow loads and unloads the set's shards to match what node leads in img.
func (s *shardSet) follow(img *controller.Image, node int32, logger *slog.Logger) (failed bool) {
	led := ledPartitions(img, s.topic, node)
	unload, load := shardChanges(s.loaded, led)
	for _, p := range unload {
		s.unload(p)
		delete(s.loaded, p)
		s.setEpoch(p, -1, false)
	}
	for _, p := range load {
		// The epoch is set before the shard starts: a loaded shard may
		// write markers at once (transactions left to complete).
		s.setEpoch(p, led[p], true)
		if err := s.load(p); err != nil {
			logger.Error("cannot load coordinator partition", "topic", s.topic, "partition", p, "err", err)
			s.setEpoch(p, -1, false)
			failed = true
			continue
		}
		s.loaded[p] = led[p]
	}
	if len(unload)+len(load) > 0 {
		logger.Debug("coordinator partitions followed", "topic", s.topic, "image_offset", img.Offset,
			"unloaded", unload, "loaded", load, "failed", failed)
	}
	return failed
}

// loadRetry is how long the reconciler waits before it tries again a shard
// that failed to load (its partition's log not open yet on this node): no
// later image may come to wake it.
const loadRetry = time.Second

// reconcile makes every enabled shard set follow the newest image.
func (r *coordinatorReconciler) reconcile() {
	r.mu.Lock()
	defer r.mu.Unlock()
	img := r.image()
	if img == nil {
		return
	}
	failed := false
	for _, s := range []*shardSet{&r.groups, &r.txns, &r.shareStates} {
		if (s.enabled == nil || s.enabled()) && s.follow(img, r.nodeID, r.logger) {
			failed = true
		}
	}
	if failed {
		time.AfterFunc(loadRetry, r.notify)
	}
}

func sortedKeys(m map[int32]int32) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// connQueue is a net.Listener fed by quorum.Listener's OnKafka: the Kafka
// connections of the controller listener, served by the broker's Server.
type connQueue struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, conns: make(chan net.Conn, 64), closed: make(chan struct{})}
}

// push hands over one connection; it is closed when the queue is full or
// closed.
func (q *connQueue) push(c net.Conn) {
	select {
	case <-q.closed:
		c.Close()
		return
	default:
	}
	select {
	case q.conns <- c:
	default:
		c.Close()
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.closed:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() {
		close(q.closed)
		for {
			select {
			case c := <-q.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

// controlledShutdown moves this node's leaderships away before it stops
// (Kafka's controlled shutdown through the heartbeat's want_shut_down), and
// hands the quorum's leadership to another voter, so that clients and the
// cluster see a leader change instead of a session timeout. On a single
// node there is nobody to hand anything to.
func (n *Node) controlledShutdown(ctx context.Context) {
	if n.quorum == nil || len(n.cfg.QuorumVoters) < 2 && n.cfg.HasRole("controller") {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if !n.cfg.HasRole("broker") {
		// nothing to hand over but the controller role
	} else if err := n.heartbeat(sctx, true); err != nil {
		n.logger.Warn("controlled shutdown: cannot move leaderships away", "err", err)
	}
	if n.quorum.Leading() {
		if err := n.quorum.Raft().LeadershipTransfer().Error(); err != nil {
			n.logger.Warn("controlled shutdown: cannot hand over the active controller role", "err", err)
		}
	}
}

// brokerChannels holds one channel per other broker, to its registered
// client listener (transaction markers to partition leaders).
type brokerChannels struct {
	n *Node
	// dial opens the connections (nil: n.peerDial): the replica
	// fetchers' sets replica.socket.receive.buffer.bytes.
	dial peerDialer
	mu   sync.Mutex
	m    map[int32]*controllerChannel
}

// send sends req to broker id at the highest version this build serves.
func (b *brokerChannels) send(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	version, err := b.n.maxVersion(req)
	if err != nil {
		return nil, err
	}
	return b.sendVersion(ctx, id, req, version)
}

// sendVersion sends req to broker id at version.
func (b *brokerChannels) sendVersion(ctx context.Context, id int32, req kmsg.Request, version int16) (kmsg.Response, error) {
	b.mu.Lock()
	if b.m == nil {
		b.m = map[int32]*controllerChannel{}
	}
	ch := b.m[id]
	if ch == nil {
		dial := b.dial
		if dial == nil {
			dial = b.n.peerDial
		}
		ch = &controllerChannel{nodeID: b.n.cfg.NodeID, dial: dial, leader: func() (int32, string) {
			// The replica manager's image: fetchers start while
			// controller.New publishes the first image, before n.ctrl is
			// set.
			img := b.n.replicas.Image()
			if img == nil {
				return -1, ""
			}
			br, ok := img.Brokers[id]
			if !ok {
				return -1, ""
			}
			host, port := br.Endpoint(b.n.cfg.InterBrokerListenerName)
			return id, net.JoinHostPort(host, fmt.Sprint(port))
		}}
		b.m[id] = ch
	}
	b.mu.Unlock()
	return ch.Request(ctx, req, version)
}

func (b *brokerChannels) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.m {
		ch.Close()
	}
}

// isrChanger sends a partition leader's ISR changes to the active
// controller: the local Controller when this node is it, AlterPartition
// (56) over the controller channel otherwise.
func (n *Node) isrChanger() replica.ISRChanger { return nodeISRChanger{n} }

type nodeISRChanger struct{ n *Node }

func (c nodeISRChanger) AlterPartition(ctx context.Context, req controller.AlterPartition) (controller.Partition, int16, error) {
	n := c.n
	if n.ctrl == nil {
		return controller.Partition{}, 0, controller.ErrNotController
	}
	if n.quorum.Leading() {
		p, code, _ := n.ctrl.AlterPartition(req)
		return p, code, nil
	}
	ar := kmsg.NewPtrAlterPartitionRequest()
	ar.BrokerID, ar.BrokerEpoch = n.cfg.NodeID, n.brokerEpoch.Load()
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = req.TopicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch, rp.NewISR = req.Partition, req.LeaderEpoch, req.PartitionEpoch, req.NewISR
	rt.Partitions = append(rt.Partitions, rp)
	ar.Topics = append(ar.Topics, rt)
	resp, err := n.channel.Request(ctx, ar, 2)
	if err != nil {
		return controller.Partition{}, 0, err
	}
	r := resp.(*kmsg.AlterPartitionResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return controller.Partition{}, 0, fmt.Errorf("broker: AlterPartition answered %d topics", len(r.Topics))
	}
	if r.ErrorCode != 0 {
		return controller.Partition{}, r.ErrorCode, nil
	}
	sp := r.Topics[0].Partitions[0]
	p := controller.Partition{Partition: sp.Partition, Leader: sp.LeaderID, LeaderEpoch: sp.LeaderEpoch, PartitionEpoch: sp.PartitionEpoch, ISR: sp.ISR}
	if img := n.ctrl.Image(); img != nil {
		if t := img.TopicsByID[req.TopicID]; t != nil && int(req.Partition) < len(t.Partitions) {
			p.Replicas = t.Partitions[req.Partition].Replicas
		}
	}
	return p, sp.ErrorCode, nil
}

// replicaFetch sends a follower's Fetch to the partition leader over a
// connection of the replica fetcher's own (transaction markers to that
// broker do not wait behind a long poll).
func (n *Node) replicaFetch(ctx context.Context, leader int32, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	version := req.Version
	if version < 12 {
		version = 16
	}
	resp, err := n.fetchPeers.sendVersion(ctx, leader, req, version)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.FetchResponse), nil
}
