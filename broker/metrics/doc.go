// Package metrics is the node's operational HTTP surface: Prometheus
// metrics on /metrics, a liveness check on /healthz and a readiness check
// on /readyz, served on the listener of the samsa.http.listener setting
// (off when it is empty, the default).
//
// Metric names are the ones Prometheus's JMX exporter gives Kafka's MBeans
// with its example configuration kafka-2_0_0.yml, so that dashboards and
// alerts written for Kafka keep working:
//
//	kafka_server_brokertopicmetrics_messagesin_total{topic}    MessagesInPerSec (topic="" is all topics)
//	kafka_server_brokertopicmetrics_bytesin_total{topic}       BytesInPerSec
//	kafka_server_brokertopicmetrics_bytesout_total{topic}      BytesOutPerSec
//	kafka_server_brokertopicmetrics_failedproducerequests_total{topic}, _failedfetchrequests_total, _totalproducerequests_total, ...
//	kafka_network_requestmetrics_requests_total{request,version}
//	kafka_network_requestmetrics_errors_total{request,error}
//	kafka_network_requestmetrics_totaltimems{request,quantile}  quantile="0.50" ... "0.999", and _count
//	kafka_network_requestmetrics_requestqueuetimems, _localtimems, _remotetimems, _responsesendtimems, _throttletimems  the same shape
//	kafka_server_socket_server_metrics_connection_count{listener,networkProcessor}
//	kafka_server_socket_server_metrics_successful_reauthentication_total{listener,networkProcessor}, _expired_connections_killed_count  (SASL listeners, KIP-368)
//	kafka_network_requestchannel_requestqueuesize, kafka_server_kafkaserver_brokerstate
//	kafka_server_replicamanager_partitioncount, _leadercount, _underreplicatedpartitions, ...
//	kafka_server_replicamanager_isrshrinks_total, _isrexpands_total   IsrShrinksPerSec, IsrExpandsPerSec (counters)
//	kafka_controller_kafkacontroller_activecontrollercount, _offlinepartitionscount, _fencedbrokercount, ...
//	kafka_log_log_size{topic,partition}, _logstartoffset, _logendoffset
//
// and consumer group lag as kafka_exporter names it:
//
//	kafka_consumergroup_lag{consumergroup,topic,partition}, kafka_consumergroup_current_offset, _lag_sum, _members
//
// plus the Go runtime (go_*) and process (process_*) collectors.
//
// Two kinds of sources feed them. Counters come from the request pipeline:
// the connection calls ObserveRequest once per request, which does atomic
// adds and allocates nothing once a request name and topic are known.
// Gauges are computed at scrape time by collectors that read the metadata
// image, the storage manager's logs and the group coordinator, so no other
// component keeps metric state. A Kafka meter's rates (OneMinuteRate, ...)
// are not exported: Prometheus derives them with rate().
//
// Usage:
//
//	m := metrics.New(metrics.Options{NodeID: 1, Image: ctrl.Image, Logs: logs.Logs})
//	srv, err := metrics.Listen(metrics.HTTPOptions{Addr: "localhost:9404", Metrics: m, Ready: ready})
//	...
//	slot := m.ObserveRequest(key, version, req, resp, queued, took, remote) // per request
//	m.ObserveResponseSend(slot, sendTook)                                     // once written
//	...
//	srv.Close(ctx)
package metrics
