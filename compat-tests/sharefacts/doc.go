// Command sharefacts asks a broker the questions of KIP-932 share groups
// (ApiVersions and features, broker and group configs and their errors,
// ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge,
// the share-group admin APIs, FindCoordinator for share keys and the
// __share_group_state topic) and prints each answer as compact JSON, so the
// answers of Kafka 4.4 and samsa can be read side by side.
//
//	compat-tests/kafka-ref/kafka-ref.sh start /tmp/k1
//	go run ./compat-tests/sharefacts -bootstrap "$(cat /tmp/k1/bootstrap)" -step group
//
// Steps: versions, configs (broker), gconfigs (group configs and the errors of
// bad values), group (heartbeats, fetch, acknowledge, sessions), admin
// (earliest, delivery count limit, offsets admin, classic APIs on a share
// group, FindCoordinator type 2, __share_group_state), more (MaxRecords,
// piggy-backed acknowledgements, two members, lock timeout; about 40 s),
// notleader, v2, gaps, s28 (in-flight batches, delivery throttling, a full
// share-session cache: start the broker with
// group.share.max.share.sessions=2 and group.share.max.size=2), s28dup (a
// partition named twice in ShareAcknowledge and ShareFetch), s28past
// (acknowledgements reaching past the acquired records), s28msg (the
// messages of INVALID_RECORD_STATE), all.
// Every step names its groups and topics with a per-run suffix, so steps can
// be repeated against one broker. It assumes node id 1 is a broker
// (kafka-ref and the samsa harness number nodes from 1). The answers of
// Kafka 4.4 are summarized in /work/wt/_share/FACTS.md of the share-group stop.
package main
