package handlers

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	sharepart "github.com/samsa-broker/samsa/broker/share"
	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/quorum"
	"github.com/samsa-broker/samsa/coordinator"
	"github.com/samsa-broker/samsa/coordinator/share"
	"github.com/samsa-broker/samsa/coordinator/sharecoord"
	"github.com/samsa-broker/samsa/coordinator/txn"
	"github.com/samsa-broker/samsa/replica"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/wire"
)

// Deps is what every handler may use. It is built once by the broker and
// shared by all connections; everything in it is safe for concurrent use.
type Deps struct {
	Config     *config.Config
	Controller *controller.Controller
	Logs       *storage.Manager
	// LogDirMoves serves AlterReplicaLogDirs (34_alter_replica_log_dirs.go).
	LogDirMoves LogDirMover
	// Replicas hosts this node's partitions: every produce, fetch,
	// list-offsets, offset-for-leader-epoch and delete-records goes
	// through it (and its high watermark rule). Required.
	Replicas *replica.Manager
	Now      func() time.Time
	Logger   *slog.Logger

	// Authz is the authorizer (authz.go); nil when authorizer.class.name
	// is unset: nothing is checked.
	Authz *Authz

	// Groups is the group coordinator; with nil, group APIs answer
	// COORDINATOR_NOT_AVAILABLE.
	Groups *coordinator.Coordinator

	// Shares serves share groups' ShareFetch and ShareAcknowledge on the
	// partitions this node leads (KIP-932); with nil both answer
	// UNSUPPORTED_VERSION.
	Shares *sharepart.Manager

	// Idempotence allocates producer ids and checks produce sequences;
	// with nil, InitProducerId answers COORDINATOR_NOT_AVAILABLE and
	// batches with a producer id are appended unchecked.
	Idempotence *Idempotence

	// Transactions is the transaction coordinator; with nil, the
	// transactional APIs answer COORDINATOR_NOT_AVAILABLE and
	// transactional batches are appended without verification.
	Transactions *txn.Coordinator

	// ShareCoordinator is the share coordinator (KIP-932), which answers
	// the share state APIs 83-87 for the __share_group_state partitions
	// this node leads; nil: they answer COORDINATOR_NOT_AVAILABLE.
	ShareCoordinator *sharecoord.Coordinator
	// SharePersister stores share-partition state for the rest of the
	// broker (share-partition leaders, the group coordinator), routing
	// each call to the node leading the key's __share_group_state
	// partition.
	SharePersister share.Persister

	// PartitionFiles, when set, refuses creating n more partitions that
	// the process could not keep open (CreateTopics, CreatePartitions).
	PartitionFiles func(n int) *controller.RequestError

	// ToController sends a request to the active controller when that is
	// another node, and returns nil, nil when it is this one (then the
	// local Controller answers). Nil: always local.
	ToController func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)

	// ValidateListenerTLS checks dynamic TLS settings of a listener
	// (listener.name.<l>.ssl.keystore.location, ...; by setting name)
	// before they are stored: the keystore must load and may replace the
	// current certificate. Nil: such settings are refused.
	ValidateListenerTLS func(listener string, overrides map[string]string) error

	// ValidateNewListeners checks, before a change of this node's
	// listeners is stored, that the listeners it adds can be served: their
	// security settings (from dynamic, the node's per-broker configs after
	// the change, over the static ones) resolve and load, and their
	// addresses can be bound (removed are the listeners the change
	// closes). Nil: not checked (the node logs what it cannot bind).
	ValidateNewListeners func(added, removed []config.Listener, protocols, dynamic map[string]string) error

	// AddObserver, on a controller, makes a registering broker-only node
	// a non-voting member of the metadata quorum (it then receives the
	// metadata log). Nil: nothing to do.
	AddObserver func(id int32, addr string) error

	// QuorumStatus returns the metadata quorum as its leader sees it
	// (DescribeQuorum); quorum.ErrNotLeader on other nodes. Nil: no quorum
	// to describe (NOT_LEADER_OR_FOLLOWER).
	QuorumStatus func() (quorum.Status, error)

	// Voters changes the metadata quorum's voters (AddRaftVoter,
	// RemoveRaftVoter). Nil: NOT_LEADER_OR_FOLLOWER.
	Voters VoterChanges

	// SendToBroker sends a request to another broker's client listener
	// (transaction markers for partitions it leads). Nil: everything is
	// written locally.
	SendToBroker func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)

	// Stopping is closed when the broker shuts down; long polls return.
	Stopping <-chan struct{}

	// fetchSessions holds KIP-227 incremental fetch sessions.
	fetchSessions *fetchSessionCache
	// topicConfigs caches each topic's effective configuration.
	topicConfigs topicConfigCache
}

// Init prepares the handlers' own state (fetch sessions). Call it once
// before serving.
func (d *Deps) Init() {
	slots := 1000 // Kafka's default of max.incremental.fetch.session.cache.slots
	if d.Config != nil {
		slots = int(d.Config.MaxIncrementalFetchSessionCacheSlots)
	}
	d.fetchSessions = newFetchSessionCache(slots)
}

// Request is one decoded request as a handler sees it.
type Request struct {
	Header wire.RequestHeader
	Body   kmsg.Request
	// ConnID numbers the connection the request came on (0: none, as in
	// tests); a share session remembers the one that opened it.
	ConnID uint64
	// ClientHost is the remote address of the connection, for
	// DescribeGroups and friends.
	ClientHost string
	// ListenerName is the name of the listener the connection came in on
	// ("" on a controller listener and in tests): Metadata,
	// FindCoordinator and DescribeCluster answer with each broker's
	// advertised address on that listener.
	ListenerName string
	// SendFiles: the caller writes a *FileFetch (record batches left in
	// the segment files) to its socket; without it, Fetch copies the
	// batches into the response.
	SendFiles bool
	// Principal is the authenticated principal of the connection
	// ("User:alice", "User:CN=client,O=example"), User:ANONYMOUS when
	// the listener authenticates nobody.
	Principal string
	// SecurityProtocol is the security protocol of the connection's
	// listener: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL ("" in tests
	// and on controller listeners, as PLAINTEXT).
	SecurityProtocol string
	// TokenAuthenticated: the connection authenticated with a delegation
	// token (SCRAM with tokenauth=true); Principal is the token's owner.
	TokenAuthenticated bool
	// Forwarded: another node forwarded the request in an Envelope, after
	// the checks of the connection it came on (Entry.AnswerLocally).
	Forwarded bool
	// Remote is set by the handler to how long it waited on others (an
	// acks=all produce for the ISR, a long-poll fetch for data): Kafka's
	// RemoteTimeMs, for metrics.
	Remote time.Duration
	// Controller is set when the connection came in on a controller
	// listener (DescribeCluster then describes the controllers).
	Controller bool
	// Authenticating is set on a SASL connection that has not
	// authenticated yet (ApiVersions, which Kafka answers there without
	// its v5 cluster check, as its SaslServerAuthenticator does).
	Authenticating bool
	// Detacher is what Detach calls; nil outside a connection.
	Detacher Detacher
}

// Detacher lets a handler's later wait run apart from its connection's
// request order (Request.Detach).
type Detacher interface{ Detach() }

// Detach tells the connection that the handler is about to wait on
// something other than this connection (a long-poll Fetch for records, an
// acks=all Produce for the ISR): the connection may start its next
// requests meanwhile, and still writes the responses in request order.
// Whatever must happen in request order (a produce's appends) has to be
// done before. Call it only right before such a wait, from the handler's
// goroutine; it is a no-op when the connection runs enough requests
// already, and without a connection.
func (r *Request) Detach() {
	if r.Detacher != nil {
		r.Detacher.Detach()
	}
}

// LogDirMover moves replicas between the node's log directories.
type LogDirMover interface {
	// AlterReplicaLogDir asks for tp's replica to live in the log
	// directory dir and returns the partition's Kafka error code.
	AlterReplicaLogDir(tp storage.TopicPartition, dir string) int16
}

// Handler answers one request. A returned Response is written back in
// request order; a returned error closes the connection (STYLE rule 8):
// Kafka errors go into the response's error codes, never into error.
type Handler func(d *Deps, r *Request) (kmsg.Response, error)

// Entry is one row of the dispatch table.
type Entry struct {
	Key        int16
	MinVersion int16
	MaxVersion int16
	Handle     Handler
	// ControllerOnly APIs (broker registration and heartbeats, ISR
	// changes, producer id blocks) are served on controller listeners
	// only, as in KRaft, and not advertised to clients.
	ControllerOnly bool
	// Forward marks requests that change cluster metadata: a node that is
	// not the active controller forwards them, as they are, to the one
	// that is (Kafka brokers forward them in an Envelope).
	Forward bool
	// AnswerLocally, for a Forward API, reports whether the receiving
	// node answers r itself with its handler instead of forwarding it:
	// the refusals Kafka's broker makes before it forwards (a
	// delegation token request on a connection that may not ask for
	// tokens). Nil: always forwarded.
	AnswerLocally func(d *Deps, r *Request) bool
}
