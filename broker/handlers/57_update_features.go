package handlers

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// UpdateFeatures, key 57, versions 0-2 (flexible; v1 adds ValidateOnly and
// UpgradeType in place of v0's AllowDowngrade; v2 has no per-feature
// results). A batch with any failed update gets one top-level error naming
// the first failure and no results, at every version, as Kafka 4.4 answers
// (compat-tests/diff); a batch that passes gets a NONE result per feature
// (v0-v1).
//
// Forwarded to the active controller, which judges every update as Kafka
// 4.4's FeatureControlManager does (controller.UpdateFeatures: upgrade
// types, supported ranges, downgrade rules, metadata.version downgrades,
// dependencies) and commits one FeatureLevelRecord per update in one batch
// unless ValidateOnly (v1+) is set; level 0 removes a feature from the
// finalized ones. Every node then reads the new levels from its metadata
// image (Features): ApiVersions v3+ and DescribeFeatures show them, and
// the switches that follow them change (see Features' users:
// transaction.version in the transaction coordinator, group.version and
// streams.version for their heartbeats, eligible.leader.replicas.version
// in the controller). kraft.version can be upgraded (samsa's quorums allow
// voter changes at either level), never downgraded.
// Sarama's functional test TestFuncAdminUpdateFeatures sends an unknown
// feature and then upgrades every feature below its supported maximum.
// Needs ALTER on the cluster (authzUpdateFeatures).
func handleUpdateFeatures(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UpdateFeaturesRequest)
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	updates := make([]controller.FeatureUpdate, 0, len(req.FeatureUpdates))
	for _, u := range req.FeatureUpdates {
		upgradeType := u.UpgradeType
		if req.Version == 0 {
			// v0 has no upgrade type: Kafka 4.4's controller reads the
			// field's default, UPGRADE, and ignores AllowDowngrade
			// (QuorumController.updateFeatures; compat-tests/diff step
			// tv-downgrade-v0), so a v0 downgrade is refused.
			upgradeType = controller.UpgradeTypeUpgrade
		}
		updates = append(updates, controller.FeatureUpdate{Name: u.Feature, Level: u.MaxVersionLevel, UpgradeType: upgradeType})
	}
	validateOnly := req.Version >= 1 && req.ValidateOnly
	if fail := d.Controller.UpdateFeatures(updates, validateOnly, supportedFeatures(d)); fail != nil {
		resp.ErrorCode = fail.Code
		resp.ErrorMessage = ptrTo(fmt.Sprintf("The update failed for all features since the following feature had an error: %s:%s (%s)",
			fail.Feature, exceptionName(fail.Code), fail.Message))
		return resp, nil
	}
	if req.Version >= 2 {
		return resp, nil // v2 has no per-feature results
	}
	for _, u := range req.FeatureUpdates { // every update passed: NONE each
		fr := kmsg.NewUpdateFeaturesResponseResult()
		fr.Feature = u.Feature
		fr.ErrorMessage = ptrTo("") // Kafka 4.4's default on success
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
