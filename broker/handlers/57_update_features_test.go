package handlers

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/controller/acl"
)

func updateFeatures(upgradeType int8, validateOnly bool, updates ...kmsg.UpdateFeaturesRequestFeatureUpdate) *kmsg.UpdateFeaturesRequest {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.ValidateOnly = validateOnly
	for _, u := range updates {
		u.UpgradeType = upgradeType
		req.FeatureUpdates = append(req.FeatureUpdates, u)
	}
	return req
}

func featureUpdate(name string, level int16) kmsg.UpdateFeaturesRequestFeatureUpdate {
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel = name, level
	return u
}

// TestUpdateFeatures: UpdateFeatures was not served, and Sarama's
// functional test TestFuncAdminUpdateFeatures failed on samsa with
// UNSUPPORTED_VERSION where Kafka 4.4 answers an update of an unknown
// feature with INVALID_UPDATE_VERSION (one top-level error naming the
// feature, no results, at every version). An update to the current level
// is NONE, Kafka's refusals are Kafka's, and a change of level is made
// (TestUpdateFeaturesChangesLevels).
func TestUpdateFeatures(t *testing.T) {
	e := newAdminEnv(t)

	// v2, an unknown feature: the whole batch fails at the top level.
	resp := e.call(t, updateFeatures(controller.UpgradeTypeUpgrade, false, featureUpdate("sarama.unsupported.feature", 1)), 2).(*kmsg.UpdateFeaturesResponse)
	want := "The update failed for all features since the following feature had an error: sarama.unsupported.feature:InvalidUpdateVersionException (Invalid update version 1 for feature sarama.unsupported.feature. Local controller 1 does not support this feature.)"
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || deref(resp.ErrorMessage) != want || len(resp.Results) != 0 {
		t.Fatalf("unknown feature v2: code %d msg %q results %d", resp.ErrorCode, deref(resp.ErrorMessage), len(resp.Results))
	}
	// v2, a batch with one good and one bad update also fails whole.
	resp = e.call(t, updateFeatures(controller.UpgradeTypeUpgrade, false, featureUpdate("transaction.version", 2), featureUpdate("share.version", 3)), 2).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || !strings.Contains(deref(resp.ErrorMessage), "share.version:InvalidUpdateVersionException (Invalid update version 3 for feature share.version. Local controller 1 only supports versions 0-2)") {
		t.Fatalf("mixed batch v2: code %d msg %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}

	// v1: per-feature results. The current levels pass (validate only or not).
	for _, validateOnly := range []bool{false, true} {
		resp = e.call(t, updateFeatures(controller.UpgradeTypeUpgrade, validateOnly, featureUpdate("transaction.version", 2), featureUpdate("group.version", 1),
			featureUpdate("eligible.leader.replicas.version", 1), featureUpdate("share.version", 2)), 1).(*kmsg.UpdateFeaturesResponse)
		if resp.ErrorCode != 0 || len(resp.Results) != 4 {
			t.Fatalf("current levels: code %d, %d results", resp.ErrorCode, len(resp.Results))
		}
		for _, r := range resp.Results {
			// "" (not null) on success, as Kafka 4.4.
			if r.ErrorCode != 0 || r.ErrorMessage == nil || *r.ErrorMessage != "" {
				t.Errorf("current level of %s: %d %q", r.Feature, r.ErrorCode, deref(r.ErrorMessage))
			}
		}
	}

	cases := []struct {
		name        string
		level       int16
		upgradeType int8
		msg         string
	}{
		{"share.version", 1, controller.UpgradeTypeUpgrade, "Invalid update version 1 for feature share.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"metadata.version", 32, controller.UpgradeTypeSafeDowngrade, "Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the requested downgrade because it might delete metadata information."},
		{"share.version", 2, 9, "Invalid update version 2 for feature share.version. The controller does not support the given upgrade type."},
		{"share.version", -1, controller.UpgradeTypeUnsafeDowngrade, "Invalid update version -1 for feature share.version. A feature version cannot be less than 0."},
		// metadata.version is advertised (7-33 at 33), so Kafka 4.4's
		// generic checks apply to it first (FeatureControlManager.
		// updateFeature): a lower level without a downgrade type is
		// refused as such, a level above the range as unsupported.
		{"metadata.version", 27, controller.UpgradeTypeUpgrade, "Invalid update version 27 for feature metadata.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."},
		{"metadata.version", 34, controller.UpgradeTypeUpgrade, "Invalid update version 34 for feature metadata.version. Local controller 1 only supports versions 7-33"},
		{"test.feature.version", 1, controller.UpgradeTypeUpgrade, "Invalid update version 1 for feature test.feature.version. Local controller 1 does not support this feature."},
	}
	for _, c := range cases {
		for _, v := range []int16{0, 1, 2} {
			if v == 0 && c.upgradeType != controller.UpgradeTypeUpgrade {
				continue // v0 has no upgrade type
			}
			resp = e.call(t, updateFeatures(c.upgradeType, false, featureUpdate(c.name, c.level)), v).(*kmsg.UpdateFeaturesResponse)
			want := "The update failed for all features since the following feature had an error: " + c.name + ":InvalidUpdateVersionException (" + c.msg + ")"
			if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || deref(resp.ErrorMessage) != want || len(resp.Results) != 0 {
				t.Errorf("v%d %s to %d (type %d): code %d %q, %d results", v, c.name, c.level, c.upgradeType, resp.ErrorCode, deref(resp.ErrorMessage), len(resp.Results))
			}
		}
	}
	// An unknown feature at level 0 is Kafka's DISABLED range: it passes.
	resp = e.call(t, updateFeatures(controller.UpgradeTypeSafeDowngrade, false, featureUpdate("no.such.feature", 0)), 1).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != 0 || len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
		t.Errorf("unknown feature to level 0: %d %+v", resp.ErrorCode, resp.Results)
	}

	// v0: AllowDowngrade is ignored, as Kafka 4.4's controller reads the
	// upgrade type's default (UPGRADE): a lower level is refused.
	down := featureUpdate("share.version", 1)
	down.AllowDowngrade = true
	resp = e.call(t, updateFeatures(0, false, down), 0).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || !strings.Contains(deref(resp.ErrorMessage), "without setting the upgrade type") || FeatureLevel(e.d, "share.version") != 2 {
		t.Errorf("v0 downgrade: %d %q, share.version %d", resp.ErrorCode, deref(resp.ErrorMessage), FeatureLevel(e.d, "share.version"))
	}

	// ALTER on the cluster is needed.
	e.d.Authz = &Authz{Authorizer: acl.Authorizer{SuperUsers: []string{"User:admin"}}}
	resp = e.callAs(t, "User:bob", updateFeatures(controller.UpgradeTypeUpgrade, false, featureUpdate("share.version", 2)), 2).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(resp.Results) != 0 {
		t.Errorf("unauthorized: code %d results %d", resp.ErrorCode, len(resp.Results))
	}
	resp = e.callAs(t, "User:admin", updateFeatures(controller.UpgradeTypeUpgrade, false, featureUpdate("share.version", 2)), 2).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != 0 || resp.ErrorMessage != nil {
		t.Errorf("super user: code %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}
}

// TestUpdateFeaturesChangesLevels: as on Kafka 4.4, a downgrade and an
// upgrade change the finalized levels that ApiVersions shows, with the
// metadata offset as the finalized features epoch; validate-only changes
// nothing; level 0 leaves the finalized list.
func TestUpdateFeaturesChangesLevels(t *testing.T) {
	e := newAdminEnv(t)
	apiVersions := func() *kmsg.ApiVersionsResponse {
		t.Helper()
		return ApiVersionsResponse(e.d)
	}
	before := apiVersions()
	if got := finalized(before)["transaction.version"]; got != 2 {
		t.Fatalf("fresh transaction.version %d", got)
	}
	resp := e.call(t, updateFeatures(controller.UpgradeTypeSafeDowngrade, true, featureUpdate("transaction.version", 1)), 1).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != 0 || finalized(apiVersions())["transaction.version"] != 2 {
		t.Fatalf("validate only: %d, levels %v", resp.ErrorCode, finalized(apiVersions()))
	}
	resp = e.call(t, updateFeatures(controller.UpgradeTypeSafeDowngrade, false, featureUpdate("transaction.version", 1), featureUpdate("group.version", 0)), 2).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("downgrade: %d %q", resp.ErrorCode, deref(resp.ErrorMessage))
	}
	after := apiVersions()
	levels := finalized(after)
	if _, listed := levels["group.version"]; levels["transaction.version"] != 1 || listed {
		t.Fatalf("after the downgrade: %v", levels)
	}
	if after.FinalizedFeaturesEpoch <= before.FinalizedFeaturesEpoch || after.FinalizedFeaturesEpoch != e.d.Controller.Image().Offset {
		t.Fatalf("epoch %d before, %d after, image offset %d", before.FinalizedFeaturesEpoch, after.FinalizedFeaturesEpoch, e.d.Controller.Image().Offset)
	}
	resp = e.call(t, updateFeatures(controller.UpgradeTypeUpgrade, false, featureUpdate("transaction.version", 2), featureUpdate("group.version", 1)), 2).(*kmsg.UpdateFeaturesResponse)
	if levels := finalized(apiVersions()); resp.ErrorCode != 0 || levels["transaction.version"] != 2 || levels["group.version"] != 1 {
		t.Fatalf("upgrade: %d, levels %v", resp.ErrorCode, levels)
	}
}

// TestFeatureLevelsGateGroups: group.version 0 turns the consumer group
// protocol off (ConsumerGroupHeartbeat UNSUPPORTED_VERSION, as Kafka 4.4's
// isConsumerGroupProtocolEnabled), share.version 0 share groups; the
// upgrade turns them back on. ApiVersions still lists the APIs, as
// Kafka's.
func TestFeatureLevelsGateGroups(t *testing.T) {
	e := newGroupEnv(t)
	e.createTopic(t, "orders", 1, nil)
	set := func(typ int8, name string, level int16) {
		t.Helper()
		resp := e.call(t, updateFeatures(typ, false, featureUpdate(name, level)), 2).(*kmsg.UpdateFeaturesResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("%s to %d: %d %q", name, level, resp.ErrorCode, deref(resp.ErrorMessage))
		}
	}
	set(controller.UpgradeTypeSafeDowngrade, "group.version", 0)
	set(controller.UpgradeTypeSafeDowngrade, "share.version", 0)
	if r := cgHeartbeat(t, e.d, 0, "g", "", 0, []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("group.version 0: heartbeat code %d", r.ErrorCode)
	}
	shb := kmsg.NewPtrShareGroupHeartbeatRequest()
	shb.GroupID, shb.MemberID, shb.SubscribedTopicNames = "sg", "m-share-1234567890123", []string{"orders"}
	if r := groupCall(t, e.d, handleShareGroupHeartbeat, shb, 1).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("share.version 0: heartbeat code %d", r.ErrorCode)
	}
	if keys := apiKeys(ApiVersionsResponse(e.d)); keys[int16(kmsg.ConsumerGroupHeartbeat)].MaxVersion == 0 {
		t.Fatal("ApiVersions left ConsumerGroupHeartbeat out at group.version 0")
	}
	set(controller.UpgradeTypeUpgrade, "group.version", 1)
	set(controller.UpgradeTypeUpgrade, "share.version", 1)
	if r := cgHeartbeat(t, e.d, 0, "g", "", 0, []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}); r.ErrorCode != 0 {
		t.Fatalf("group.version 1: heartbeat code %d", r.ErrorCode)
	}
	if r := groupCall(t, e.d, handleShareGroupHeartbeat, shb, 1).(*kmsg.ShareGroupHeartbeatResponse); r.ErrorCode == kerr.UnsupportedVersion.Code {
		t.Fatalf("share.version 1: heartbeat code %d", r.ErrorCode)
	}
}
