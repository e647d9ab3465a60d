package handlers

import (
	"slices"

	"github.com/samsa-broker/samsa/controller"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions, key 18, versions 0-5.
//
// The answer is built from Table, so what we advertise is exactly what we
// dispatch. v1 adds throttle_time_ms; v3 is flexible and carries the
// client's software name and version, each of which must match Kafka's
// pattern [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? (ApiVersionsRequest.
// isValid): otherwise the answer is INVALID_REQUEST with no API keys, as
// Kafka's; v3 lists no supported feature whose range starts at 0, as
// Kafka's. v5 (KIP-1242) adds the cluster id and node id the client
// believes it is connected to: only one of them set (a cluster id with
// node id -1, or a node id with a null cluster id) is INVALID_REQUEST, and
// both set but naming another cluster or another node is
// REBOOTSTRAP_REQUIRED, so that a client whose connection was routed to the
// wrong broker rebootstraps (the Java client 4.4 sends them with
// metadata.cluster.check.enable). As in Kafka 4.4 (KafkaApis; its
// ControllerApis and its SaslServerAuthenticator only validate) the
// mismatch is checked on broker listeners and, with SASL, once the client
// authenticated; both errors answer with no API keys. v3+ lists the
// supported and finalized features (see Features). A request of a
// version we do not know is answered by the connection layer in the v0
// shape with UNSUPPORTED_VERSION and this same list, so that the client
// retries with a version we speak.
//
// The consumer and streams group APIs (68, 69, 88, 89, 93) are listed,
// and group.version and streams.version finalized at 1, whatever
// group.coordinator.rebalance.protocols lists, as Kafka 4.4 does (checked
// on kafka-ref with "classic" and "classic,consumer"; the heartbeats then
// answer UNSUPPORTED_VERSION). ShareFetch and ShareAcknowledge (78, 79)
// are left out when the node has no share manager (Deps.Shares).
func handleApiVersions(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	if r.Header.APIVersion >= 3 && (!validSoftwareNameOrVersion(req.ClientSoftwareName) || !validSoftwareNameOrVersion(req.ClientSoftwareVersion)) {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if r.Header.APIVersion >= 5 {
		if (req.ClusterID == nil) != (req.NodeID == -1) {
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		}
		if req.ClusterID != nil && !r.Controller && !r.Authenticating && d != nil && d.Controller != nil && (*req.ClusterID != d.Controller.Image().ClusterID || req.NodeID != d.Config.NodeID) {
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp, nil
		}
	}
	resp := ApiVersionsResponse(d)
	if r.Header.APIVersion < 4 {
		// Kafka 4.4 leaves features whose supported range starts at 0
		// out of v3 answers (ApiVersionsResponse.
		// maybeFilterSupportedFeatureKeys): clients of that age reject
		// a range with a minimum of 0.
		resp.SupportedFeatures = slices.DeleteFunc(resp.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool { return f.MinVersion == 0 })
	}
	return resp, nil
}

// validSoftwareNameOrVersion reports whether s matches Kafka's
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? (KIP-511): letters, digits,
// '-' and '.', starting and ending with a letter or digit.
func validSoftwareNameOrVersion(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && ((c != '-' && c != '.') || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// Feature is one feature flag of ApiVersions v3+: the range this broker
// supports and the level finalized for the cluster.
type Feature struct {
	Name           string
	MinVersion     int16
	MaxVersion     int16
	FinalizedLevel int16 // 0: supported, not finalized (not listed as finalized)
}

// defaultFeatures are the feature flags samsa advertises, with Kafka 4.4's
// supported ranges and the levels of a Kafka 4.4 cluster freshly formatted
// at its latest release (kafka-ref, compat-tests/diff):
//
//   - metadata.version 33 (4.4-IV2), supported 7-33 (3.3-IV3 on): the
//     cluster's Kafka release level; samsa serves the 4.4 APIs and
//     behaviours the levels up to it bring (topic ids, KIP-853 voters,
//     ELR). Its metadata log is not KRaft's, so no level changes records.
//
//   - kraft.version, supported 0-1 (KIP-853 voter changes, which samsa
//     serves): finalized 1 with a dynamic quorum
//     (controller.quorum.bootstrap.servers, no controller.quorum.voters),
//     else 0, as Kafka formats a static quorum at 0.
//
//   - transaction.version 2 (KIP-890 part 2: clients skip
//     AddPartitionsToTxn, EndTxn bumps the epoch).
//
//   - group.version 1 (KIP-848 consumer groups).
//
//   - eligible.leader.replicas.version 1 (KIP-966: the controller keeps
//     eligible leader replicas, controller/elr.go, shown by
//     DescribeTopicPartitions).
//
//   - share.version 2 (KIP-932 share groups, with no configuration).
//
//   - streams.version 1 (KIP-1071 streams groups, 88_streams_group_*.go).
//
// group.version and streams.version are 1 whatever
// group.coordinator.rebalance.protocols says: Kafka 4.4's format command
// writes both levels with the protocols of the config left out (it warns
// that the setting is deprecated), and the config gates the heartbeats
// (consumerGroupsOn, streamsGroupsOn) apart from the levels.
//
// These are the defaults: the levels while the metadata log holds no
// FeatureLevelRecord for a feature. UpdateFeatures (57_update_features.go)
// changes them through the active controller, and Features reads the
// levels of this node's metadata image (controller/features.go). A feature
// finalized at level 0 is not listed among the finalized ones, as in
// Kafka. The finalized features epoch is the offset of the metadata image,
// as Kafka's (KRaftMetadataCache.features: highestOffsetAndEpoch).
func defaultFeatures(d *Deps) []Feature {
	kraft := Feature{Name: "kraft.version", MinVersion: 0, MaxVersion: 1}
	if d != nil && d.Config != nil && len(d.Config.QuorumVoters) == 0 && len(d.Config.QuorumBootstrapServers) > 0 {
		kraft.FinalizedLevel = 1
	}
	return []Feature{
		{Name: "metadata.version", MinVersion: 7, MaxVersion: 33, FinalizedLevel: 33},
		kraft,
		{Name: "transaction.version", MinVersion: 0, MaxVersion: 2, FinalizedLevel: 2},
		{Name: "group.version", MinVersion: 0, MaxVersion: 1, FinalizedLevel: 1},
		{Name: "eligible.leader.replicas.version", MinVersion: 0, MaxVersion: 1, FinalizedLevel: 1},
		{Name: "share.version", MinVersion: 0, MaxVersion: 2, FinalizedLevel: 2},
		{Name: "streams.version", MinVersion: 0, MaxVersion: 1, FinalizedLevel: 1},
	}
}

// Features are the feature flags with this node's supported ranges and
// the levels finalized in its metadata image (defaultFeatures where the
// log holds none).
func Features(d *Deps) []Feature {
	fs := defaultFeatures(d)
	if d == nil || d.Controller == nil {
		return fs
	}
	img := d.Controller.Image()
	for i, f := range fs {
		fs[i].FinalizedLevel = img.FeatureLevel(f.Name, f.FinalizedLevel)
	}
	return fs
}

// FeatureLevel is the finalized level of a feature on this node (0 when
// not finalized or unknown).
func FeatureLevel(d *Deps, name string) int16 {
	for _, f := range Features(d) {
		if f.Name == name {
			return f.FinalizedLevel
		}
	}
	return 0
}

// finalizedLevel is a feature's finalized level in this node's metadata
// image, def where the log holds none.
func finalizedLevel(d *Deps, name string, def int16) int16 {
	if d == nil || d.Controller == nil {
		return def
	}
	return d.Controller.Image().FeatureLevel(name, def)
}

// consumerGroupsOn reports whether ConsumerGroupHeartbeat and
// ConsumerGroupDescribe are served: "consumer" in
// group.coordinator.rebalance.protocols and group.version 1 finalized, as
// Kafka 4.4's KafkaApis.isConsumerGroupProtocolEnabled (otherwise
// UNSUPPORTED_VERSION, which clients take as "use the classic protocol").
// ApiVersions lists the APIs whatever the config and the level, as
// Kafka 4.4's (ApiVersionsResponse.filterApis leaves out only the client
// telemetry APIs without a telemetry plugin).
func consumerGroupsOn(d *Deps) bool {
	return consumerProtocolEnabled(d) && finalizedLevel(d, "group.version", 1) >= 1
}

// streamsGroupsOn is consumerGroupsOn for streams groups: "streams" in
// the protocols and streams.version 1 (isStreamsGroupProtocolEnabled).
func streamsGroupsOn(d *Deps) bool {
	return streamsProtocolEnabled(d) && finalizedLevel(d, "streams.version", 1) >= 1
}

// shareGroupsOn reports whether share.version (1 or 2) enables share
// groups (Kafka 4.4's isShareGroupProtocolEnabled: ShareGroupHeartbeat,
// ShareGroupDescribe, ShareFetch and ShareAcknowledge answer
// UNSUPPORTED_VERSION at level 0).
func shareGroupsOn(d *Deps) bool {
	return finalizedLevel(d, "share.version", 2) >= 1
}

// featureDependencies are the lowest levels of other features that a
// level needs (Kafka 4.4's FeatureVersion.dependencies): only
// eligible.leader.replicas.version 1 has one, metadata.version 23
// (4.0-IV1); transaction.version, group.version, share.version and
// streams.version levels depend on nothing.
var featureDependencies = map[string]map[int16]map[string]int16{
	controller.FeatureELRVersion: {1: {controller.FeatureMetadataVersion: 23}},
}

// supportedFeatures is the feature table the controller judges
// UpdateFeatures with: ranges, defaults and dependencies.
func supportedFeatures(d *Deps) []controller.SupportedFeature {
	var out []controller.SupportedFeature
	for _, f := range defaultFeatures(d) {
		out = append(out, controller.SupportedFeature{Name: f.Name, Min: f.MinVersion, Max: f.MaxVersion, DefaultLevel: f.FinalizedLevel,
			Dependencies: featureDependencies[f.Name]})
	}
	return out
}

// ApiVersionsResponse lists every API of Table with its version range,
// and the features.
func ApiVersionsResponse(d *Deps) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, e := range Table() {
		if e.ControllerOnly {
			continue // served on controller listeners to other nodes only
		}
		// The consumer and streams group APIs are listed whether their
		// protocol is on or off (group.coordinator.rebalance.protocols,
		// group.version, streams.version): Kafka 4.4 lists them and
		// answers UNSUPPORTED_VERSION when off (diff steps
		// streams-version-0).
		if d != nil && d.Shares == nil && (e.Key == int16(kmsg.ShareFetch) || e.Key == int16(kmsg.ShareAcknowledge)) {
			continue // no share manager: share groups are off
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey = e.Key
		k.MinVersion = e.MinVersion
		k.MaxVersion = e.MaxVersion
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	if d != nil && d.Controller != nil {
		resp.FinalizedFeaturesEpoch = max(d.Controller.Image().Offset, 0)
	}
	for _, f := range Features(d) {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.MinVersion, f.MaxVersion
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		if f.FinalizedLevel > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.Name, f.FinalizedLevel, f.FinalizedLevel
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	return resp
}
