package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// Options tells Metrics where to read the broker's state at scrape time.
// Every field may be nil; its metrics are then left out.
type Options struct {
	// NodeID is this broker's id.
	NodeID int32
	// Image returns the current metadata image.
	Image func() *controller.Image
	// ActiveController returns the id of the active controller, -1 if none.
	ActiveController func() int32
	// MinInsyncReplicas is the broker default of min.insync.replicas; a
	// topic's min.insync.replicas override wins.
	MinInsyncReplicas int32
	// Logs returns the local partition logs.
	Logs func() map[storage.TopicPartition]*storage.Log
	// Groups reads consumer groups and their committed offsets; the
	// group coordinator satisfies it.
	Groups Groups
	// Connections returns the open client connections per listener name.
	Connections func() map[string]int
	// Reauthentications returns, per SASL listener name, the successful
	// re-authentications (KIP-368) and the connections closed because
	// their session expired without one.
	Reauthentications func() map[string]ReauthCounts
	// RequestQueueSize returns the requests read and not yet handled,
	// over all connections.
	RequestQueueSize func() int
	// BrokerState returns Kafka's BrokerState code (3 RUNNING, ...).
	BrokerState func() BrokerState
	// ISRChanges returns the ISR shrinks and expands of partitions led
	// here since start (nil: not exported).
	ISRChanges func() (shrinks, expands int64)
	// TopicName resolves a topic id, for requests that carry ids.
	TopicName func(id [16]byte) (string, bool)
	// TopicExists reports whether a topic is in the image; counters of
	// deleted topics are dropped at scrape.
	TopicExists func(name string) bool
	// Now is the clock of the request time windows (default time.Now).
	Now func() time.Time
	// ScrapeTimeout bounds the group coordinator calls of one scrape
	// (default 5s).
	ScrapeTimeout time.Duration
}

// ReauthCounts are a SASL listener's re-authentication counters.
type ReauthCounts struct {
	// Successful re-authentications (Kafka's socket-server-metrics
	// successful-reauthentication-total).
	Successful int64
	// ExpiredKilled: connections closed on a request after their session
	// expired (expired-connections-killed-count).
	ExpiredKilled int64
}

// BrokerState is Kafka's BrokerState enum, the value of
// kafka_server_kafkaserver_brokerstate.
type BrokerState int

// The broker states samsa reports.
const (
	BrokerStarting     BrokerState = 1
	BrokerRunning      BrokerState = 3
	BrokerShuttingDown BrokerState = 7
)

// Groups is the part of the group coordinator the lag metrics read.
type Groups interface {
	ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse
	DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse
	OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse
}

// Metrics is the Prometheus registry of one node: the request counters
// that ObserveRequest updates, collectors that read the node's state at
// scrape time, and the Go runtime and process collectors.
type Metrics struct {
	opts     Options
	requests *requestCounters
	registry *prometheus.Registry
}

// New returns the metrics of one node.
func New(o Options) *Metrics {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ScrapeTimeout <= 0 {
		o.ScrapeTimeout = 5 * time.Second
	}
	m := &Metrics{opts: o, requests: newRequestCounters(), registry: prometheus.NewRegistry()}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		requestCollector{m},
		stateCollector{m},
	)
	return m
}

// Registry returns the registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics when the scraper asks for it). A collector that fails is
// reported in the log and the rest is still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}

// requestCollector exposes requestCounters.
type requestCollector struct{ m *Metrics }

func (c requestCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, t := range timeDescs {
		ch <- t.quantiles
		ch <- t.count
	}
	for _, d := range []*prometheus.Desc{descRequests, descErrors,
		descMessagesIn, descBytesIn, descBytesOut, descReplicationBytesIn, descReplicationBytesOut,
		descFailedProduce, descFailedFetch, descTotalProduce, descTotalFetch} {
		ch <- d
	}
}

func (c requestCollector) Collect(ch chan<- prometheus.Metric) { c.m.collectRequests(ch) }

func itoa(n int) string { return strconv.Itoa(n) }

// Metric names are those Prometheus's JMX exporter gives Kafka's MBeans
// with its example config kafka-2_0_0.yml (lowercased, "PerSec" dropped and
// "_total" added to meters), so that dashboards built on it work; consumer
// group lag uses kafka_exporter's names.
var (
	descMessagesIn = topicDesc("kafka_server_brokertopicmetrics_messagesin_total",
		"Records appended by produce requests (MessagesInPerSec).")
	descBytesIn = topicDesc("kafka_server_brokertopicmetrics_bytesin_total",
		"Record bytes appended by produce requests (BytesInPerSec).")
	descBytesOut = topicDesc("kafka_server_brokertopicmetrics_bytesout_total",
		"Record bytes returned to consumer fetches (BytesOutPerSec).")
	descReplicationBytesIn = topicDesc("kafka_server_brokertopicmetrics_replicationbytesin_total",
		"Record bytes fetched from leaders by this broker's followers (ReplicationBytesInPerSec).")
	descReplicationBytesOut = topicDesc("kafka_server_brokertopicmetrics_replicationbytesout_total",
		"Record bytes returned to follower fetches (ReplicationBytesOutPerSec).")
	descFailedProduce = topicDesc("kafka_server_brokertopicmetrics_failedproducerequests_total",
		"Partitions of produce requests that failed, not counting NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION and other errors Kafka does not count (FailedProduceRequestsPerSec).")
	descFailedFetch = topicDesc("kafka_server_brokertopicmetrics_failedfetchrequests_total",
		"Partitions of consumer fetches that failed, not counting the errors Kafka does not count (FailedFetchRequestsPerSec).")
	descTotalProduce = topicDesc("kafka_server_brokertopicmetrics_totalproducerequests_total",
		"Partitions of produce requests (TotalProduceRequestsPerSec).")
	descTotalFetch = topicDesc("kafka_server_brokertopicmetrics_totalfetchrequests_total",
		"Partitions of consumer fetches (TotalFetchRequestsPerSec).")

	descRequests = prometheus.NewDesc("kafka_network_requestmetrics_requests_total",
		"Requests handled, by request name and version (RequestMetrics RequestsPerSec).", []string{"request", "version"}, nil)
	descErrors = prometheus.NewDesc("kafka_network_requestmetrics_errors_total",
		"Error codes in responses, NONE included, by request name and error (RequestMetrics ErrorsPerSec).", []string{"request", "error"}, nil)
	// timeDescs are the JMX exporter's rendering of Kafka's RequestMetrics
	// histograms: a gauge per quantile and a _count counter, by timeKind.
	timeDescs = [numTimes]struct{ quantiles, count *prometheus.Desc }{
		totalTime:        timeDesc("totaltimems", "Milliseconds from a request's last byte read until its handler returned, quantiles over the last 5 minutes (RequestMetrics TotalTimeMs; samsa leaves out the response's send time)."),
		queueTime:        timeDesc("requestqueuetimems", "Milliseconds a request waited behind earlier requests of its connection (RequestMetrics RequestQueueTimeMs)."),
		localTime:        timeDesc("localtimems", "Milliseconds in the request's handler, less the remote time (RequestMetrics LocalTimeMs)."),
		remoteTime:       timeDesc("remotetimems", "Milliseconds the handler waited on others: acks=all produces for the ISR, long-poll fetches for data (RequestMetrics RemoteTimeMs)."),
		responseSendTime: timeDesc("responsesendtimems", "Milliseconds writing the response to the socket, sendfile included (RequestMetrics ResponseSendTimeMs)."),
		throttleTime:     timeDesc("throttletimems", "Milliseconds of client quota throttle in the response, 0 when not throttled (RequestMetrics ThrottleTimeMs)."),
	}

	descConnections = prometheus.NewDesc("kafka_server_socket_server_metrics_connection_count",
		"Open client connections (socket-server-metrics connection-count); samsa has no network processors, so networkProcessor is always 0.", []string{"listener", "networkProcessor"}, nil)

	descReauthentications = prometheus.NewDesc("kafka_server_socket_server_metrics_successful_reauthentication_total",
		"Successful SASL re-authentications (KIP-368) of the listener's connections (socket-server-metrics successful-reauthentication-total).", []string{"listener", "networkProcessor"}, nil)
	descExpiredKilled = prometheus.NewDesc("kafka_server_socket_server_metrics_expired_connections_killed_count",
		"Connections closed because their SASL session expired (connections.max.reauth.ms or the credential's expiry) without a re-authentication (socket-server-metrics expired-connections-killed-count).", []string{"listener", "networkProcessor"}, nil)

	descRequestQueue = prometheus.NewDesc("kafka_network_requestchannel_requestqueuesize",
		"Requests read and not yet handled, over all connections (RequestChannel RequestQueueSize).", nil, nil)
	descBrokerState = prometheus.NewDesc("kafka_server_kafkaserver_brokerstate",
		"Kafka's broker state: 1 starting, 3 running, 7 shutting down (KafkaServer BrokerState).", nil, nil)

	descPartitionCount = prometheus.NewDesc("kafka_server_replicamanager_partitioncount",
		"Partitions with a replica on this broker (ReplicaManager PartitionCount).", nil, nil)
	descLeaderCount = prometheus.NewDesc("kafka_server_replicamanager_leadercount",
		"Partitions led by this broker (ReplicaManager LeaderCount).", nil, nil)
	descUnderReplicated = prometheus.NewDesc("kafka_server_replicamanager_underreplicatedpartitions",
		"Partitions led by this broker whose ISR is smaller than their replicas (ReplicaManager UnderReplicatedPartitions).", nil, nil)
	descUnderMinISR = prometheus.NewDesc("kafka_server_replicamanager_underminisrpartitioncount",
		"Partitions led by this broker whose ISR is below min.insync.replicas (ReplicaManager UnderMinIsrPartitionCount).", nil, nil)
	descAtMinISR = prometheus.NewDesc("kafka_server_replicamanager_atminisrpartitioncount",
		"Partitions led by this broker whose ISR is exactly min.insync.replicas (ReplicaManager AtMinIsrPartitionCount).", nil, nil)
	descISRShrinks = prometheus.NewDesc("kafka_server_replicamanager_isrshrinks_total",
		"ISR shrinks of partitions led by this broker accepted by the controller (ReplicaManager IsrShrinksPerSec; rate() gives the per-second figure).", nil, nil)
	descISRExpands = prometheus.NewDesc("kafka_server_replicamanager_isrexpands_total",
		"ISR expands of partitions led by this broker accepted by the controller (ReplicaManager IsrExpandsPerSec).", nil, nil)
	descOfflineReplicas = prometheus.NewDesc("kafka_server_replicamanager_offlinereplicacount",
		"Partitions assigned to this broker that have no open local log (ReplicaManager OfflineReplicaCount).", nil, nil)

	descActiveController = prometheus.NewDesc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller, 0 elsewhere (KafkaController ActiveControllerCount).", nil, nil)
	descOfflinePartitions = prometheus.NewDesc("kafka_controller_kafkacontroller_offlinepartitionscount",
		"Partitions without a leader; reported by the active controller only, 0 elsewhere, so that sums over brokers hold (KafkaController OfflinePartitionsCount).", nil, nil)
	descFencedBrokers = prometheus.NewDesc("kafka_controller_kafkacontroller_fencedbrokercount",
		"Registered brokers that are fenced; active controller only (KafkaController FencedBrokerCount).", nil, nil)
	descActiveBrokers = prometheus.NewDesc("kafka_controller_kafkacontroller_activebrokercount",
		"Registered brokers that are not fenced; active controller only (KafkaController ActiveBrokerCount).", nil, nil)
	descGlobalTopics = prometheus.NewDesc("kafka_controller_kafkacontroller_globaltopiccount",
		"Topics in the cluster; active controller only (KafkaController GlobalTopicCount).", nil, nil)
	descGlobalPartitions = prometheus.NewDesc("kafka_controller_kafkacontroller_globalpartitioncount",
		"Partitions in the cluster; active controller only (KafkaController GlobalPartitionCount).", nil, nil)
	descPreferredImbalance = prometheus.NewDesc("kafka_controller_kafkacontroller_preferredreplicaimbalancecount",
		"Partitions whose leader is not their first replica; active controller only (KafkaController PreferredReplicaImbalanceCount).", nil, nil)

	descLogSize  = partitionDesc("kafka_log_log_size", "Bytes of the partition's segment files (Log Size).")
	descLogStart = partitionDesc("kafka_log_log_logstartoffset", "First offset of the partition's log (Log LogStartOffset).")
	descLogEnd   = partitionDesc("kafka_log_log_logendoffset", "Offset the next record appended to the partition gets (Log LogEndOffset).")

	descTopicPartitions = prometheus.NewDesc("kafka_topic_partitions",
		"Partitions of the topic; active controller only (kafka_exporter).", []string{"topic"}, nil)
	descPartitionCurrent = partitionDesc("kafka_topic_partition_current_offset",
		"High watermark of a partition led by this broker (kafka_exporter).")
	descPartitionOldest = partitionDesc("kafka_topic_partition_oldest_offset",
		"Log start offset of a partition led by this broker (kafka_exporter).")
	descPartitionISR = partitionDesc("kafka_topic_partition_in_sync_replica",
		"In-sync replicas of a partition led by this broker (kafka_exporter).")
	descPartitionLeader = partitionDesc("kafka_topic_partition_leader",
		"Leader of a partition led by this broker (kafka_exporter).")
	descPartitionReplicas = partitionDesc("kafka_topic_partition_replicas",
		"Replicas of a partition led by this broker (kafka_exporter).")
	descPartitionUnder = partitionDesc("kafka_topic_partition_under_replicated_partition",
		"1 if a partition led by this broker is under-replicated (kafka_exporter).")
	descBrokers = prometheus.NewDesc("kafka_brokers",
		"Registered brokers; active controller only (kafka_exporter).", nil, nil)

	descGroupOffset = groupDesc("kafka_consumergroup_current_offset",
		"Committed offset of a group coordinated by this broker (kafka_exporter).")
	descGroupLag = groupDesc("kafka_consumergroup_lag",
		"High watermark minus committed offset of a group coordinated by this broker (kafka_exporter).")
	descGroupOffsetSum = prometheus.NewDesc("kafka_consumergroup_current_offset_sum",
		"Sum of a group's committed offsets over a topic's partitions (kafka_exporter).", []string{"consumergroup", "topic"}, nil)
	descGroupLagSum = prometheus.NewDesc("kafka_consumergroup_lag_sum",
		"Sum of a group's lag over a topic's partitions (kafka_exporter).", []string{"consumergroup", "topic"}, nil)
	descGroupMembers = prometheus.NewDesc("kafka_consumergroup_members",
		"Members of a classic group coordinated by this broker (kafka_exporter).", []string{"consumergroup"}, nil)
)

func timeDesc(name, help string) struct{ quantiles, count *prometheus.Desc } {
	full := "kafka_network_requestmetrics_" + name
	return struct{ quantiles, count *prometheus.Desc }{
		prometheus.NewDesc(full, help, []string{"request", "quantile"}, nil),
		prometheus.NewDesc(full+"_count", "Requests timed by "+full+".", []string{"request"}, nil),
	}
}

func topicDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"topic"}, nil)
}

func partitionDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"topic", "partition"}, nil)
}

func groupDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, []string{"consumergroup", "topic", "partition"}, nil)
}
