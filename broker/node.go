package broker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/broker/handlers"
	"github.com/samsa-broker/samsa/broker/metrics"
	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/quorum"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
	"github.com/samsa-broker/samsa/coordinator/txn"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// Node is one running samsa node: storage, the controller (a one-voter
// quorum on a single node), the handlers and the listeners.
type Node struct {
	opts    NodeOptions
	cfg     *config.Config
	logger  *slog.Logger
	logs    *storage.Manager
	quorum  *quorum.Quorum
	qtrans  io.Closer // the quorum's transport, when the Node owns it
	channel *controllerChannel
	// lifecycle carries this broker's registration and heartbeats to the
	// active controller on a connection of their own, as Kafka's
	// BrokerLifecycleManager has its own "heartbeat" channel: on channel
	// they queued behind forwarded admin requests and AlterPartition,
	// which may wait seconds for a commit, and timed out under load
	// (heartbeatTimeout).
	lifecycle *controllerChannel
	clusterID string
	voterTurn atomic.Int32 // leaderOf's turn through the voters
	// discovered is the controller listener address of the active
	// controller last learned from controller.quorum.bootstrap.servers
	// (bootstrap_join.go), a string; unset for none.
	discovered atomic.Value
	peers      brokerChannels
	// fetchPeers carries the replica fetchers' requests to leaders.
	fetchPeers brokerChannels
	// peerDial connects to other brokers' inter-broker listener when it
	// is TLS or SASL (peer_dial.go); nil for PLAINTEXT.
	peerDial  peerDialer
	ctrlConns *connQueue // Kafka connections of the controller listener
	coord     *coordinatorReconciler
	ctrl      *controller.Controller
	// ctrlPub is ctrl once created, for what runs before (Raft
	// connections authenticating on a SASL controller listener).
	ctrlPub  atomic.Pointer[controller.Controller]
	srv      *Server
	unlock   func()
	stopping chan struct{}
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	// listeners are the static client listeners (the registration's);
	// Listeners has those served now, runtime ones included.
	listeners []config.Listener
	// security is the static listeners' TLS and SASL, by name;
	// secBuilder builds a runtime listener's (listener_runtime.go).
	security   map[string]*ListenerSecurity
	secBuilder *securityBuilder
	// listenerSync wakes the listener reconciler; listenerMoved holds
	// the moved addresses it has logged (its goroutine only).
	listenerSync  chan struct{}
	listenerMoved map[string]string
	// listenerReconciles counts the reconciliations done (tests wait
	// for one after a change).
	listenerReconciles atomic.Int64
	adv                config.Listener   // advs[0], the default listener
	advs               []config.Listener // every advertised client listener (advertised.go)
	groups             *coordinator.Coordinator
	txns               *txn.Coordinator
	shares             sharePartitions // share_partitions.go

	// shareTopics deletes deleted topics' share state (share_topics_deleted.go).
	shareTopics shareTopicCleanup

	// http is the samsa.http.listener server (ops.go); nil when off.
	http     *metrics.HTTPServer
	replicas *replica.Manager
	// shareCoord is the share coordinator (share_state.go).
	shareCoord *sharecoord.Coordinator
	// lastLeaderBalance is when controllerDuties last balanced leaders
	// (auto.leader.rebalance.enable); only its ticker goroutine uses it.
	lastLeaderBalance time.Time
	// lastTokenSweep is when controllerDuties last removed expired
	// delegation tokens (heartbeat goroutine only).
	lastTokenSweep time.Time
	// lastUncleanCheck is when controllerDuties last ran the periodic
	// unclean leader elections (unclean.leader.election.interval.ms); zero
	// while this node is not the active controller (heartbeat goroutine
	// only).
	lastUncleanCheck time.Time
	// incarnation identifies this process in its broker registration, and
	// brokerEpoch is the epoch the registration got (cluster.go).
	incarnation controller.Uuid
	brokerEpoch atomic.Int64
	// dirFailures: the log dirs' directory.id and failures (log_dir_failure.go).
	dirFailures *logDirFailures
	// moves: AlterReplicaLogDirs' moves between log dirs (log_dir_move.go).
	moves *logDirMoves
	// previousEpoch is the broker epoch of this node's last clean
	// shutdown, -1 after a crash (clean_shutdown.go).
	previousEpoch int64
}

// startGroups builds the group coordinator; the coordinator reconciler
// loads the __consumer_offsets partitions this node leads.
func (n *Node) startGroups() error {
	cfg := n.cfg
	delay := time.Duration(cfg.GroupInitialRebalanceDelayMs) * time.Millisecond
	if delay == 0 {
		delay = -1 // coordinator.Options: 0 is Kafka's default, negative none
	}
	var err error
	n.groups, err = coordinator.New(coordinator.Options{
		NumPartitions: cfg.OffsetsTopicNumPartitions,
		WriteTimeout:  time.Duration(cfg.OffsetsCommitTimeoutMs) * time.Millisecond,
		OpenLog: func(p int32) (coordinator.Log, error) {
			rp, ok := n.replicas.Partition(storage.TopicPartition{Topic: coordinator.OffsetsTopic, Partition: p})
			if !ok {
				return nil, fmt.Errorf("broker: no log for %s-%d", coordinator.OffsetsTopic, p)
			}
			return rp.CoordinatorLog(time.Duration(cfg.OffsetsCommitTimeoutMs) * time.Millisecond), nil
		},
		Now:                           time.Now,
		Logger:                        n.logger.With("component", "coordinator"),
		MinSessionTimeout:             time.Duration(cfg.GroupMinSessionTimeoutMs) * time.Millisecond,
		MaxSessionTimeout:             time.Duration(cfg.GroupMaxSessionTimeoutMs) * time.Millisecond,
		InitialRebalanceDelay:         delay,
		MaxGroupSize:                  int(cfg.GroupMaxSize),
		OffsetsRetention:              time.Duration(cfg.OffsetsRetentionMinutes) * time.Minute,
		OffsetsRetentionCheckInterval: time.Duration(cfg.OffsetsRetentionCheckIntervalMs) * time.Millisecond,
		MaxMetadataBytes:              int(cfg.OffsetMetadataMaxBytes),
		MaxMessageBytes:               int(cfg.MessageMaxBytes),
		Topics:                        imageTopics{n.ctrl},
		ConsumerSessionTimeout:        time.Duration(cfg.GroupConsumerSessionTimeoutMs) * time.Millisecond,
		ConsumerHeartbeatInterval:     time.Duration(cfg.GroupConsumerHeartbeatIntervalMs) * time.Millisecond,
		ConsumerMaxGroupSize:          int(cfg.GroupConsumerMaxSize),
		ConsumerAssignors:             cfg.GroupConsumerAssignors,
		ConsumerMigrationPolicy:       cfg.GroupConsumerMigrationPolicy,
		ShareSessionTimeout:           time.Duration(cfg.GroupShareSessionTimeoutMs) * time.Millisecond,
		ShareHeartbeatInterval:        time.Duration(cfg.GroupShareHeartbeatIntervalMs) * time.Millisecond,
		ShareMaxGroupSize:             int(cfg.GroupShareMaxSize),
		StreamsSessionTimeout:         time.Duration(cfg.GroupStreamsSessionTimeoutMs) * time.Millisecond,
		StreamsHeartbeatInterval:      time.Duration(cfg.GroupStreamsHeartbeatIntervalMs) * time.Millisecond,
		StreamsMaxGroupSize:           int(cfg.GroupStreamsMaxSize),
		StreamsNumStandbyReplicas:     int(cfg.GroupStreamsNumStandbyReplicas),
		StreamsAcceptableRecoveryLag:  cfg.GroupStreamsAcceptableRecoveryLag,
		StreamsTaskOffsetInterval:     time.Duration(cfg.GroupStreamsTaskOffsetIntervalMs) * time.Millisecond,
		StreamsInitialRebalanceDelay:  time.Duration(cfg.GroupStreamsInitialRebalanceDelayMs) * time.Millisecond,
		GroupConfig:                   func(g string) map[string]string { return n.ctrl.Image().GroupConfig(g) },
	})
	return err
}

// startTransactions builds the transaction coordinator (the coordinator
// reconciler loads the __transaction_state partitions this node leads);
// its markers go through the handlers' MarkerWriter.
func (n *Node) startTransactions(deps *handlers.Deps, pids txn.ProducerIDs) error {
	cfg := n.cfg
	var err error
	n.txns, err = txn.New(txn.Options{
		NumPartitions: cfg.TransactionStateLogNumPartitions,
		Log: func(p int32) (txn.Log, bool) {
			rp, ok := n.replicas.Partition(storage.TopicPartition{Topic: txn.TransactionStateTopic, Partition: p})
			if !ok {
				return nil, false
			}
			return rp.CoordinatorLog(0), true
		},
		ProducerIDs:      pids,
		Markers:          handlers.MarkerWriter{D: deps},
		CoordinatorEpoch: n.coord.transactionCoordinatorEpoch,
		PartitionExists: func(topic string, partition int32) bool {
			t, ok := n.ctrl.Image().Topics[topic]
			return ok && partition >= 0 && int(partition) < len(t.Partitions)
		},
		Now:                   time.Now,
		Logger:                n.logger.With("component", "transactions"),
		MaxTimeout:            time.Duration(cfg.TransactionMaxTimeoutMs) * time.Millisecond,
		IDExpiration:          time.Duration(cfg.TransactionalIDExpirationMs) * time.Millisecond,
		AbortTimedOutInterval: time.Duration(cfg.TransactionAbortTimedOutIntervalMs) * time.Millisecond,
		RemoveExpiredInterval: time.Duration(cfg.TransactionRemoveExpiredIntervalMs) * time.Millisecond,
	})
	if err != nil {
		return err
	}
	deps.Transactions = n.txns
	return nil
}

// imageTopics resolves topic ids against the current metadata image.
type imageTopics struct{ ctrl *controller.Controller }

func (t imageTopics) TopicName(id [16]byte) (string, bool) {
	tp, ok := t.ctrl.Image().TopicsByID[controller.Uuid(id)]
	if !ok {
		return "", false
	}
	return tp.Name, true
}

func (t imageTopics) TopicID(name string) ([16]byte, bool) {
	tp, ok := t.ctrl.Image().Topics[name]
	if !ok {
		return [16]byte{}, false
	}
	return tp.ID, true
}

// TopicByName and TopicNames make imageTopics a coordinator.TopicImage,
// for classic members of consumer groups (online migration).
func (t imageTopics) TopicByName(name string) ([16]byte, int32, bool) {
	tp := t.ctrl.Image().Topic(name)
	if tp == nil {
		return [16]byte{}, 0, false
	}
	return [16]byte(tp.ID), int32(len(tp.Partitions)), true
}

func (t imageTopics) TopicNames() []string {
	img := t.ctrl.Image()
	names := make([]string, 0, len(img.Topics))
	for n := range img.Topics {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// StartNode opens the data dirs, replays the metadata log, opens every
// local partition log and starts serving. On error everything opened so far
// is closed again.
func StartNode(cfg *config.Config, logger *slog.Logger) (*Node, error) {
	return StartNodeWith(cfg, logger, NodeOptions{})
}

// StartNodeWith is StartNode with the process-level hooks of opts.
func StartNodeWith(cfg *config.Config, logger *slog.Logger, opts NodeOptions) (*Node, error) {
	n := &Node{cfg: cfg, logger: logger, stopping: make(chan struct{}), opts: opts}
	logFileLimit(logger)
	node, err := n.start()
	if err != nil {
		n.closeStorage()
		return nil, explainFSError(explainStartError(err), cfg.LogDirs)
	}
	return node, nil
}

func (n *Node) start() (_ *Node, err error) {
	cfg, logger := n.cfg, n.logger
	// Keystores and credentials first: a bad one fails the start before
	// anything runs. SCRAM lookups read the controller's image once it
	// exists (Raft connections to a SASL controller listener log in
	// before).
	security, secBuilder, err := listenerSecurity(cfg, n.image)
	if err != nil {
		return nil, err
	}
	n.security, n.secBuilder = security, secBuilder
	n.listenerSync, n.listenerMoved = make(chan struct{}, 1), map[string]string{}
	if n.peerDial, n.fetchPeers.dial, err = interBrokerDialer(cfg, security); err != nil {
		return nil, err
	}
	ctrlSec, ctrlDial, err := controllerSecurity(cfg, security, n.raftClusterAction())
	if err != nil {
		return nil, err
	}
	if _, err := rand.Read(n.incarnation[:]); err != nil {
		return nil, fmt.Errorf("incarnation id: %w", err)
	}
	n.brokerEpoch.Store(-1)
	for _, dir := range cfg.LogDirs {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("log dir: %w", err)
		}
	}
	if n.unlock, err = lockDirs(cfg.LogDirs); err != nil {
		return nil, err
	}
	if n.previousEpoch, err = takeCleanShutdown(cfg.LogDirs); err != nil {
		return nil, err
	}
	if err := probeListeners(cfg.Listeners); err != nil {
		return nil, err
	}
	clusterID, err := checkMetaProperties(cfg)
	if err != nil {
		return nil, err
	}
	if n.dirFailures, err = newLogDirFailures(cfg.LogDirs, cfg.MetadataLogDir, n.opts.Halt); err != nil {
		return nil, err
	}
	n.logs, err = storage.OpenManager(storage.ManagerOptions{
		FS:                     vfs.OS,
		Dirs:                   cfg.LogDirs,
		Now:                    time.Now,
		Logger:                 logger.With("component", "storage"),
		OnAllLogDirsFailed:     n.opts.OnAllLogDirsFailed,
		OnLogDirFailed:         n.dirFailures.failed,
		CordonedDirs:           cfg.CordonedLogDirs,
		RetentionCheckInterval: time.Duration(cfg.LogRetentionCheckIntervalMs) * time.Millisecond,
		FlushCheckInterval:     flushCheckInterval(cfg),
		CheckpointInterval:     5 * time.Second, // replica.high.watermark.checkpoint.interval.ms: a restarted replica's HW
		CleanerEnable:          cfg.LogCleanerEnable,
		CleanerBackoff:         time.Duration(cfg.LogCleanerBackoffMs) * time.Millisecond,
		CleanerMapBytes:        cfg.LogCleanerDedupeBufferSize,
		// Idle producers go from every log's state (Kafka's
		// producer.id.expiration.ms, checked every
		// producer.id.expiration.check.interval.ms).
		ProducerExpiration:              time.Duration(cfg.ProducerIDExpirationMs) * time.Millisecond,
		ProducerExpirationCheckInterval: time.Duration(cfg.ProducerIDExpirationCheckIntervalMs) * time.Millisecond,
		OpenFileBudget:                  openFileBudget(), // issue 11 item 5
	})
	if err != nil {
		return nil, err
	}
	metaDir := filepath.Join(cfg.LogDirs[0], "__samsa_metadata")
	if err := os.MkdirAll(metaDir, 0o755); err != nil {
		return nil, err
	}
	isBroker, isController := cfg.HasRole("broker"), cfg.HasRole("controller")
	n.clusterID = clusterID
	n.ctrlConns = newConnQueue(nil)
	n.channel = &controllerChannel{nodeID: cfg.NodeID, leader: n.leaderOf, dial: ctrlDial}
	n.lifecycle = &controllerChannel{nodeID: cfg.NodeID, leader: n.leaderOf, dial: ctrlDial}
	n.peers.n = n
	n.fetchPeers.n = n
	var ctrlAddr net.Addr
	var prebound map[string]net.Listener
	if isController {
		if n.quorum, n.qtrans, ctrlAddr, err = openQuorum(cfg, clusterID, metaDir, n.ctrlConns.push, ctrlSec, logger.With("component", "quorum")); err != nil {
			return nil, err
		}
		n.ctrlConns.addr = ctrlAddr
	} else {
		// A broker-only node follows the metadata log as a non-voting
		// Raft member on its advertised listener, which it must register
		// before the log reaches it.
		if _, _, err := quorumOf(cfg); err != nil {
			return nil, err
		}
		bind, adv, err := brokerOnlyListener(cfg)
		if err != nil {
			return nil, err
		}
		n.advs = advertised(cfg, nil, nil)
		n.adv = adv
		kafka := newConnQueue(nil)
		var ln *quorum.Listener
		if n.quorum, ln, err = openObserver(cfg, clusterID, metaDir, bind, net.JoinHostPort(adv.Host, strconv.Itoa(adv.Port)), kafka.push, ctrlSec, logger.With("component", "quorum"), n.discoveredController); err != nil {
			return nil, err
		}
		n.qtrans = kafka
		kafka.addr = ln.BoundAddr()
		prebound = map[string]net.Listener{adv.Name: kafka}
		rctx, rcancel := context.WithTimeout(context.Background(), registrationTimeout)
		err = n.register(rctx)
		if err == nil {
			err = n.quorum.WaitReady(rctx)
		}
		rcancel()
		if err != nil {
			return nil, fmt.Errorf("registering with the active controller: %w", err)
		}
	}
	n.coord = newCoordinatorReconciler(n)
	n.replicas = replica.NewManager(replica.Options{NodeID: cfg.NodeID, Logs: n.logs, Logger: logger.With("component", "replica"),
		ISR:               n.isrChanger(),
		MinInsyncReplicas: func(t *controller.Topic) int { return int(cfg.TopicConfig(t.Configs).MinInsyncReplicas) },
		ReplicaLagTimeMax: time.Duration(cfg.ReplicaLagTimeMaxMs) * time.Millisecond,
		FetchMaxWait:      time.Duration(cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
		FetchBackoff:      time.Duration(cfg.ReplicaFetchBackoffMs) * time.Millisecond,
		FetchMaxBytes:     cfg.ReplicaFetchResponseMaxBytes,
		Fetch:             n.replicaFetch,
		// replica.fetch.max.bytes (issue 11 item 4)
		PartitionFetchMaxBytes: cfg.ReplicaFetchMaxBytes})
	n.moves = newLogDirMoves(cfg.NodeID, cfg.LogDirs, n.logs, n.dirFailures, func() *controller.Image { return n.ctrl.Image() }, logger.With("component", "logs"))
	syncer := &LogSyncer{NodeID: cfg.NodeID, Config: cfg, Logs: n.logs, Logger: logger.With("component", "logs"), Replicas: n.replicas, dirs: n.dirFailures, moves: n.moves}
	events := &metadataEvents{logger: logger.With("component", "metadata"), nodeID: cfg.NodeID}
	n.ctrl, err = controller.New(controller.Options{
		NodeID:                   cfg.NodeID,
		ClusterID:                clusterID,
		Quorum:                   n.quorum,
		Machine:                  n.quorum.Machine(),
		Now:                      time.Now,
		Rand:                     rand.Reader,
		Logger:                   logger.With("component", "controller"),
		DefaultPartitions:        cfg.NumPartitions,
		DefaultReplicationFactor: cfg.DefaultReplicationFactor,
		SessionTimeout:           time.Duration(cfg.BrokerSessionTimeoutMs) * time.Millisecond,
		ValidateTopicConfig:      validateTopicConfig,
		OnChange: func(prev, next *controller.Image) {
			events.apply(prev, next)
			syncer.Apply(prev, next)
			n.coord.imageChanged(next)
			n.shares.reconcile(next, n.replicas)
			n.shareTopics.topicsDeleted(prev, next)
			if isBroker {
				n.listenerConfigsChanged(prev, next)
			}
		},
		UncleanLeaderElection: func(t *controller.Topic) bool {
			return cfg.TopicConfig(t.Configs).UncleanLeaderElectionEnable
		},
		// eligible.leader.replicas.version 1, as a new Kafka 4.4 cluster.
		EligibleLeaderReplicas: func(t *controller.Topic) int {
			return int(cfg.TopicConfig(t.Configs).MinInsyncReplicas)
		},
		CaughtUp: n.catchUpGate(), // catchup.go
	})
	if err != nil {
		return nil, err
	}
	n.ctrlPub.Store(n.ctrl)

	for _, l := range cfg.Listeners {
		if isBroker && !isControllerListener(cfg, l.Name) {
			n.listeners = append(n.listeners, l)
		}
	}
	sopts := serverOptions(cfg, n.listeners, logger.With("component", "broker"))
	sopts.Prebound = prebound
	sopts.Security = security
	n.srv, err = New(sopts)
	if err != nil {
		return nil, err
	}
	n.srv.opts.Forward = n.forward
	if isController && n.quorum.Leading() {
		// Kafka 4.4's activation on an empty log: the cluster-wide
		// min.insync.replicas comes before the brokers register.
		// controllerDuties repeats it wherever the quorum's leadership
		// goes.
		n.ensureClusterMinISR()
	}
	if isBroker {
		if isController {
			n.advs = advertised(cfg, n.listeners, n.srv.Addrs())
			n.adv = n.advs[0]
		}
		rctx, rcancel := context.WithTimeout(context.Background(), registrationTimeout)
		if isController {
			err = n.register(rctx)
		}
		if err == nil {
			err = n.waitRegistered(rctx)
		}
		rcancel()
		if err != nil {
			n.srv.closeListeners()
			return nil, fmt.Errorf("registering with the active controller: %w", err)
		}
	}
	// Only now, with this node's registration in its image, has the image
	// caught up with the quorum: before, it can be empty (no quorum yet,
	// as after a whole-cluster restart) and every log would look stray
	// (docs/DURABILITY.md, finding 4).
	syncer.SetAsideStray(n.ctrl.Image())
	var idem *handlers.Idempotence
	var pids *producerIDs
	if isBroker {
		if err := n.startGroups(); err != nil {
			n.srv.closeListeners()
			return nil, err
		}
		if pids, err = newProducerIDs(n.allocateProducerIDs, vfs.OS, cfg.LogDirs[0]); err != nil {
			n.srv.closeListeners()
			return nil, err
		}
		idem = handlers.NewIdempotence(pids)
	}
	deps := &handlers.Deps{
		Idempotence:  idem,
		AddObserver:  n.addObserver,
		Config:       cfg,
		Controller:   n.ctrl,
		Logs:         n.logs,
		LogDirMoves:  n.moves,
		Replicas:     n.replicas,
		Groups:       n.groups,
		Now:          time.Now,
		Logger:       logger.With("component", "handlers"),
		Stopping:     n.stopping,
		ToController: n.toController,
		SendToBroker: n.peers.send,
		// Refuse partitions the open file limit cannot hold (issue 11 item 5).
		PartitionFiles: CheckPartitionFiles,
		QuorumStatus:   n.quorum.Status,
		Voters:         n.quorum, // AddRaftVoter, RemoveRaftVoter
		Authz:          handlers.NewAuthz(cfg.Authorizer),
		// Dynamic keystore updates (security_reload.go).
		ValidateListenerTLS: func(l string, o map[string]string) error { return validateListenerTLS(n.currentSecurity(), l, o) },
	}
	deps.Init()
	if isBroker {
		// Before the transaction coordinator and the share-partition
		// leaders: they may take deps.SharePersister.
		if err := n.startShareState(deps); err != nil {
			n.srv.closeListeners()
			return nil, err
		}
		if err := n.startTransactions(deps, pids); err != nil {
			n.srv.closeListeners()
			return nil, err
		}
		n.shares.start(cfg, deps, logger)
		n.srv.OnConnClose(n.shares.connClosed)
		n.wireShares(deps)
	}
	if err := n.startHTTP(); err != nil {
		n.srv.closeListeners()
		return nil, err
	}
	if isBroker {
		// Listeners added at runtime and stored (listener_runtime.go).
		deps.ValidateNewListeners = n.validateNewListeners
		n.reconcileListeners()
	}
	n.srv.opts.Deps = deps
	n.coord.reconcile()
	n.srv.Serve()
	events.on.Store(true)
	if ctrlAddr != nil {
		_, sec := controllerListener(cfg, security)
		n.srv.ServeController(n.ctrlConns, sec)
	}

	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	if n.quorum.Leading() {
		// Creating the internal topics (100 partitions by default) takes
		// about half a second: the node answers meanwhile, with
		// COORDINATOR_NOT_AVAILABLE for coordinator lookups until they
		// exist and are loaded, as Kafka does.
		n.bg.Add(1)
		go func() { defer n.bg.Done(); n.ensureInternalTopics() }()
	}
	n.bg.Add(1)
	go func() { defer n.bg.Done(); superviseLoop(ctx, logger, "storage", n.logs.Run) }()
	n.bg.Add(1)
	go func() { defer n.bg.Done(); superviseLoop(ctx, logger, "coordinator leadership", n.coord.run) }()
	n.bg.Add(1)
	go func() { defer n.bg.Done(); superviseLoop(ctx, logger, "broker heartbeat", n.heartbeatLoop) }()
	n.bg.Add(1)
	go func() { defer n.bg.Done(); superviseLoop(ctx, logger, "log dir failures", n.runLogDirFailures) }()
	n.bg.Add(1)
	go func() { defer n.bg.Done(); superviseLoop(ctx, logger, "log dir assignments", n.runDirAssignments) }()
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		superviseLoop(ctx, logger, "security reload", func(ctx context.Context) { runSecurityReload(ctx, logger, n.currentSecurity, n.tlsOverrides) })
	}()
	if isBroker {
		n.bg.Add(1)
		go func() { defer n.bg.Done(); superviseLoop(ctx, logger, "dynamic listeners", n.runListenerSync) }()
	}
	// Moves between log dirs a stop or crash interrupted start again, as
	// Kafka resumes its future replicas (log_dir_move.go).
	n.moves.resume(n.logs.InterruptedMoves())
	return n, nil
}

// Addrs returns the bound client listener addresses.
func (n *Node) Addrs() []net.Addr { return n.srv.Addrs() }

// Listeners returns the client listeners served (runtime ones included),
// in the order of Addrs.
func (n *Node) Listeners() []config.Listener { return n.srv.Listeners() }

// Advertised returns the listener registered for clients.
func (n *Node) Advertised() config.Listener { return n.adv }

// AdvertisedFor returns the advertised address of the listener called
// name; false for a listener not given to clients (a controller listener).
func (n *Node) AdvertisedFor(name string) (config.Listener, bool) {
	for _, l := range n.advs {
		if strings.EqualFold(l.Name, name) {
			return l, true
		}
	}
	return config.Listener{}, false
}

// Controller returns the node's controller.
func (n *Node) Controller() *controller.Controller { return n.ctrl }

// Close stops accepting, finishes in-flight requests (long polls return
// at once), then flushes and closes every log and the metadata log.
func (n *Node) Close(ctx context.Context) error {
	close(n.stopping)
	n.stopHTTP(ctx)
	n.controlledShutdown(ctx)
	if err := n.srv.Shutdown(ctx); err != nil {
		n.logger.Warn("connections did not finish in time", "err", err)
	}
	n.cancel()
	n.bg.Wait()
	n.moves.close()
	return n.closeStorage()
}

func (n *Node) closeStorage() error {
	if n.shareCoord != nil {
		n.shareCoord.Close()
	}
	n.shares.close()
	if n.txns != nil {
		n.txns.Close()
	}
	if n.groups != nil {
		n.groups.Close()
	}
	var errs []error
	if n.ctrl != nil {
		n.ctrl.Close()
	}
	if n.channel != nil {
		n.channel.Close()
	}
	if n.lifecycle != nil {
		n.lifecycle.Close()
	}
	n.peers.close()
	n.fetchPeers.close()
	if n.replicas != nil {
		n.replicas.Close()
	}
	if n.quorum != nil {
		if err := n.quorum.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing metadata quorum: %w", err))
		}
		n.qtrans.Close()
	}
	if n.ctrlConns != nil {
		n.ctrlConns.Close()
	}
	if n.logs != nil {
		err := n.logs.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("closing logs: %w", err))
		}
		if epoch := n.brokerEpoch.Load(); err == nil && epoch >= 0 && len(n.logs.FailedLogDirs()) == 0 {
			errs = append(errs, writeCleanShutdown(n.cfg.LogDirs, epoch))
		}
	}
	if n.unlock != nil {
		n.unlock()
	}
	return errors.Join(errs...)
}

func validateTopicConfig(m map[string]string) (int16, string) {
	if err := config.ValidateTopicConfig(m); err != nil {
		var ce *config.ConfigError
		if errors.As(err, &ce) {
			return ce.Code, ce.Message
		}
		return kerr.InvalidConfig.Code, err.Error()
	}
	return 0, ""
}

// flushCheckInterval is how often the background flusher looks for logs
// past their flush.ms: log.flush.scheduler.interval.ms, bounded so that a
// small flush.ms still works.
func flushCheckInterval(cfg *config.Config) time.Duration {
	ms := cfg.LogFlushSchedulerIntervalMs
	if ms <= 0 || ms > 1000 {
		ms = 1000
	}
	return time.Duration(ms) * time.Millisecond
}

func isControllerListener(cfg *config.Config, name string) bool {
	for _, n := range cfg.ControllerListenerNames {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// lockDirs takes an exclusive lock on each log dir (the .lock file, as
// Kafka), so two brokers never share a data dir.
func lockDirs(dirs []string) (func(), error) {
	var files []*os.File
	unlock := func() {
		for _, f := range files {
			syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
			f.Close()
		}
	}
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			unlock()
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			unlock()
			return nil, fmt.Errorf("log dir %s is in use by another process: %w", d, err)
		}
		files = append(files, f)
	}
	return unlock, nil
}

// checkMetaProperties reads or writes meta.properties in every log dir, in
// Kafka's format (version=1, cluster.id, node.id, directory.id; a file
// without directory.id gets one), and returns the cluster
// id. A dir that belongs to another cluster or node is an error at start.
// meta.properties is written only into a dir that holds nothing else (a
// new dir); a dir that holds data but no meta.properties, or one whose
// meta.properties is garbled, refuses the start (ErrMetaProperties): giving
// it a new cluster id would adopt data of an unknown cluster, and Kafka
// refuses to start on such a dir too.
func checkMetaProperties(cfg *config.Config) (string, error) {
	clusterID := cfg.ClusterID
	var missing []string
	for _, d := range cfg.LogDirs {
		p := filepath.Join(d, "meta.properties")
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			data, err := dirData(d)
			if err != nil {
				return "", err
			}
			if data != "" {
				return "", fmt.Errorf("%w: log dir %s holds data (%s) but has no meta.properties; it may belong to another cluster or its meta.properties was lost. "+
					"samsa refuses to start rather than give it a new cluster id: restore %s (version=1, cluster.id=<the cluster's id>, node.id=%d) or empty the directory",
					ErrMetaProperties, d, data, p, cfg.NodeID)
			}
			missing = append(missing, p)
			continue
		}
		if err != nil {
			return "", err
		}
		props, err := parseMetaProperties(b, cfg.NodeID)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %w; samsa refuses to start rather than guess the cluster id: repair the file (version=1, cluster.id=<the cluster's id>, node.id=%d)",
				ErrMetaProperties, p, err, cfg.NodeID)
		}
		if err := addDirectoryID(p, b, props); err != nil {
			return "", err
		}
		id := props["cluster.id"]
		if clusterID != "" && clusterID != id {
			return "", fmt.Errorf("%s: cluster.id %s does not match configured %s", p, id, clusterID)
		}
		clusterID = id
	}
	if clusterID == "" && len(cfg.QuorumVoters) > 1 {
		// Every node of a quorum must share the cluster id, so a random
		// one per node cannot work. The apache/kafka image gives
		// CLUSTER_ID this default when it is unset, so a three-node
		// compose file without it forms one cluster there, and here.
		clusterID = DefaultClusterID
	}
	if clusterID == "" {
		var raw [16]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", err
		}
		clusterID = base64.RawURLEncoding.EncodeToString(raw[:])
	}
	for _, p := range missing {
		dirID, err := newDirectoryID() // log_dir_failure.go
		if err != nil {
			return "", err
		}
		text := fmt.Sprintf("#\n#%s\nnode.id=%d\nversion=1\ncluster.id=%s\ndirectory.id=%s\n", time.Now().UTC().Format(time.RFC1123), cfg.NodeID, clusterID, dirID)
		if err := writeFileSync(p, []byte(text)); err != nil {
			return "", err
		}
	}
	return clusterID, nil
}

// DefaultClusterID is the cluster id of a multi-node quorum whose nodes
// are given none (the apache/kafka image's CLUSTER_ID default).
const DefaultClusterID = "5L6g3nShT-eMCtK--X86sw"

// ErrMetaProperties reports a log dir whose meta.properties is missing
// while it holds data, or is garbled.
var ErrMetaProperties = errors.New("broker: meta.properties")

// parseMetaProperties parses a meta.properties file and checks it as Kafka
// does for version 1: version=1, a non-empty cluster.id and node.id equal
// to nodeID; a line that is neither a comment nor key=value is garbled.
func parseMetaProperties(b []byte, nodeID int32) (map[string]string, error) {
	props := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("line %d is not key=value: %q", i+1, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if v := props["version"]; v != "1" {
		return nil, fmt.Errorf("version %q, want 1", v)
	}
	if props["cluster.id"] == "" {
		return nil, errors.New("no cluster.id")
	}
	n, ok := props["node.id"]
	if !ok {
		return nil, errors.New("no node.id")
	}
	if n != strconv.Itoa(int(nodeID)) {
		return nil, fmt.Errorf("node.id %s does not match configured node.id %d", n, nodeID)
	}
	return props, nil
}

// dirData returns the name of an entry of a log dir that is data, or "" when
// the dir holds only what a start creates before meta.properties (the .lock
// file, a meta.properties.tmp of an interrupted write).
func dirData(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range entries {
		switch e.Name() {
		case ".lock", "meta.properties.tmp":
		default:
			return e.Name(), nil
		}
	}
	return "", nil
}

func writeFileSync(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return vfs.OS.SyncDir(filepath.Dir(path))
}
