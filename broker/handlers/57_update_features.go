package handlers

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UpdateFeatures, key 57, versions 0-2 (flexible; v1 adds ValidateOnly and
// UpgradeType in place of v0's AllowDowngrade; v2 has no per-feature
// results). A batch with any failed update gets one top-level error naming
// the first failure and no results, at every version, as Kafka 4.4 answers
// (compat-tests/diff); a batch that passes gets a NONE result per feature
// (v0-v1).
//
// samsa's feature levels are fixed (Features: each finalized at the level a
// freshly formatted Kafka 4.4 cluster has), so UpdateFeatures changes
// nothing. Each update is judged as Kafka 4.4's controller judges it
// (FeatureControlManager): an unknown upgrade type, a level below 0, a
// feature samsa does not know or a level outside its supported range, a
// lower level without a downgrade type and a higher one with a downgrade
// type are INVALID_UPDATE_VERSION with Kafka's messages. An update that
// passes and asks for the level the feature has is answered NONE, as Kafka
// answers it (Kafka writes a record that changes nothing). An update that
// passes and asks for another level is INVALID_UPDATE_VERSION: samsa cannot
// change a level (on Kafka it succeeds). Sarama's functional test
// TestFuncAdminUpdateFeatures sends an unknown feature and then upgrades
// every feature below its supported maximum (none on samsa with the
// consumer protocol on). Needs ALTER on the cluster (authzUpdateFeatures).
func handleUpdateFeatures(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	features := Features(d)
	type result struct {
		name string
		code int16
		msg  string
	}
	results := make([]result, 0, len(req.FeatureUpdates))
	for _, u := range req.FeatureUpdates {
		upgradeType := u.UpgradeType
		if req.Version == 0 {
			upgradeType = upgradeTypeUpgrade
			if u.AllowDowngrade {
				upgradeType = upgradeTypeSafeDowngrade
			}
		}
		code, msg := featureUpdateError(features, d.Config.NodeID, u.Feature, u.MaxVersionLevel, upgradeType)
		results = append(results, result{name: u.Feature, code: code, msg: msg})
	}
	for _, res := range results {
		if res.code != 0 {
			resp.ErrorCode = res.code
			resp.ErrorMessage = ptrTo(fmt.Sprintf("The update failed for all features since the following feature had an error: %s:%s (%s)",
				res.name, exceptionName(res.code), res.msg))
			return resp, nil
		}
	}
	if req.Version >= 2 {
		return resp, nil // v2 has no per-feature results
	}
	for _, res := range results { // every update passed: NONE each
		fr := kmsg.NewUpdateFeaturesResponseResult()
		fr.Feature = res.name
		resp.Results = append(resp.Results, fr)
	}
	return resp, nil
}

// authzUpdateFeatures: ALTER on the cluster, else a top-level
// CLUSTER_AUTHORIZATION_FAILED and no results, as Kafka answers.
func authzUpdateFeatures(d *Deps, r *Request, next Handler) (kmsg.Response, error) {
	if d.authorizedCluster(r, kmsg.ACLOperationAlter) {
		return next(d, r)
	}
	resp := r.Body.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	resp.ErrorMessage = ptrTo(kerr.ClusterAuthorizationFailed.Message)
	return resp, nil
}

// The UpgradeType values of UpdateFeatures v1+ (Kafka's FeatureUpdate.UpgradeType).
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

// featureUpdateError judges one update of UpdateFeatures against samsa's
// features: 0 and "" when it asks for the level the feature has, else
// INVALID_UPDATE_VERSION and why, in Kafka 4.4's words where Kafka refuses
// it too. nodeID names the node in "Local controller N does not support
// this feature."
func featureUpdateError(features []Feature, nodeID int32, name string, level int16, upgradeType int8) (int16, string) {
	invalid := func(why string) (int16, string) {
		return kerr.InvalidUpdateVersion.Code, fmt.Sprintf("Invalid update version %d for feature %s. %s", level, name, why)
	}
	if upgradeType != upgradeTypeUpgrade && upgradeType != upgradeTypeSafeDowngrade && upgradeType != upgradeTypeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	if level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	// A feature samsa does not know has Kafka's DISABLED range, 0-0, and
	// level 0 (asking for 0 then passes and changes nothing).
	f := Feature{Name: name}
	for _, known := range features {
		if known.Name == name {
			f = known
		}
	}
	if level < f.MinVersion || level > f.MaxVersion {
		if f.MaxVersion == 0 {
			return invalid(fmt.Sprintf("Local controller %d does not support this feature.", nodeID))
		}
		return invalid(fmt.Sprintf("Local controller %d only supports versions %d-%d", nodeID, f.MinVersion, f.MaxVersion))
	}
	current := f.FinalizedLevel
	switch {
	case level < current && upgradeType == upgradeTypeUpgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case level > current && upgradeType != upgradeTypeUpgrade:
		return invalid("Can't downgrade to a newer version.")
	case level != current:
		return invalid(fmt.Sprintf("samsa's feature levels are fixed: %s stays at level %d.", name, current))
	}
	return 0, ""
}

// exceptionName is the Java exception class name Kafka puts in
// UpdateFeatures v2's top-level message for an error code.
func exceptionName(code int16) string {
	switch code {
	case kerr.InvalidUpdateVersion.Code:
		return "InvalidUpdateVersionException"
	case kerr.ClusterAuthorizationFailed.Code:
		return "ClusterAuthorizationException"
	}
	return kerr.ErrorForCode(code).Error()
}
