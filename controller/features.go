package controller

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Finalized feature levels (KIP-584) in the metadata log, as Kafka's
// FeatureLevelRecord: UpdateFeatures on the active controller writes one
// record per updated feature (FeatureControlManager.updateFeatures), and
// every node reads the levels from its image (Image.FeatureLevel).
//
// A feature the log holds no record for is at the level the node's
// defaults give it (the levels a freshly formatted Kafka 4.4 cluster has,
// broker/handlers.Features): samsa does not write bootstrap records at
// format time, so a cluster formatted by an older build reads the same
// levels as before. A record with level 0 removes the feature from the
// finalized ones, as Kafka's replay does; it is kept in the image (level 0
// is not "no record": the default no longer applies).
//
// kraft.version starts at the quorum's level (1 for a dynamic quorum, 0
// for static voters) and can only be upgraded, as in Kafka (where it lives
// in the KRaft log's control records); samsa's quorums allow voter changes
// at either level.

// RecordFeatureLevel is the type of FeatureLevelRecord.
const RecordFeatureLevel RecordType = 31

// FeatureLevelRecord finalizes a feature at a level (0: not finalized).
type FeatureLevelRecord struct {
	Name  string `json:"name"`
	Level int16  `json:"level"`
}

func (FeatureLevelRecord) recordType() RecordType { return RecordFeatureLevel }

// Feature names with a meaning to the controller.
const (
	FeatureMetadataVersion = "metadata.version"
	FeatureKRaftVersion    = "kraft.version"
	FeatureELRVersion      = "eligible.leader.replicas.version"
)

// FeatureLevel returns the finalized level of a feature: the one its last
// FeatureLevelRecord set, or def when the log has none.
func (img *Image) FeatureLevel(name string, def int16) int16 {
	if l, ok := img.Features[name]; ok {
		return l
	}
	return def
}

// applyFeatureLevel applies r; the map is copied whole (features change
// rarely).
func (b *builder) applyFeatureLevel(r FeatureLevelRecord) error {
	if r.Name == "" || r.Level < 0 {
		return fmt.Errorf("%w: feature %q at level %d", ErrApply, r.Name, r.Level)
	}
	next := make(map[string]int16, len(b.img.Features)+1)
	maps.Copy(next, b.img.Features)
	next[r.Name] = r.Level
	b.img.Features = next
	return nil
}

// featureLevelRecords returns the records that rebuild img's feature
// levels, by name, for snapshots.
func featureLevelRecords(recs []Record, img *Image) []Record {
	for _, name := range slices.Sorted(maps.Keys(img.Features)) {
		recs = append(recs, FeatureLevelRecord{Name: name, Level: img.Features[name]})
	}
	return recs
}

// SupportedFeature is a feature this node knows: the levels it supports
// and the level in effect while the metadata log holds no record for it.
type SupportedFeature struct {
	Name         string
	Min, Max     int16
	DefaultLevel int16
	// Dependencies are the lowest levels of other features that each
	// level of this one needs (Kafka's FeatureVersion.dependencies), by
	// level.
	Dependencies map[int16]map[string]int16
}

// FeatureUpdate is one update of UpdateFeatures. UpgradeType is v1's:
// 1 upgrade, 2 safe downgrade, 3 unsafe downgrade (v0's allow_downgrade
// maps to 2), anything else unknown.
type FeatureUpdate struct {
	Name        string
	Level       int16
	UpgradeType int8
}

// The upgrade types of UpdateFeatures v1+ (Kafka's FeatureUpdate.UpgradeType).
const (
	UpgradeTypeUpgrade         int8 = 1
	UpgradeTypeSafeDowngrade   int8 = 2
	UpgradeTypeUnsafeDowngrade int8 = 3
)

// FeatureUpdateError is the first update of an UpdateFeatures that
// failed: Kafka answers the whole request with it.
type FeatureUpdateError struct {
	Feature string
	Code    int16
	Message string
}

// UpdateFeatures judges updates as Kafka 4.4's FeatureControlManager and,
// when every one passes and validateOnly is false, commits one
// FeatureLevelRecord per update (an update to the current level too, as
// Kafka writes it), all in one batch. supported are the features this
// node supports, with their defaults; nodeID names it in Kafka's "Local
// controller N" messages. Every samsa node runs the same feature table,
// so the local ranges are the cluster's (Kafka also asks every registered
// broker and controller; see FINDINGS.md). A nil result is success.
func (c *Controller) UpdateFeatures(updates []FeatureUpdate, validateOnly bool, supported []SupportedFeature) *FeatureUpdateError {
	var failed *FeatureUpdateError
	err := c.write(validateOnly, func(img *Image) []Record {
		var recs []Record
		recs, failed = decideUpdateFeatures(img, c.opts.NodeID, updates, supported)
		if failed != nil {
			return nil
		}
		return recs
	})
	if failed != nil {
		return failed
	}
	if err != nil {
		code, msg := errorCode(err)
		name := ""
		if len(updates) > 0 {
			name = updates[0].Name
		}
		return &FeatureUpdateError{Feature: name, Code: code, Message: msg}
	}
	return nil
}

// decideUpdateFeatures returns the records of updates, or the first that
// fails.
func decideUpdateFeatures(img *Image, nodeID int32, updates []FeatureUpdate, supported []SupportedFeature) ([]Record, *FeatureUpdateError) {
	byName := map[string]SupportedFeature{}
	for _, f := range supported {
		byName[f.Name] = f
	}
	// The levels the cluster would have after the batch, for the
	// dependency checks: every finalized feature and metadata.version,
	// then every update (Kafka's proposedUpdates).
	proposed := map[string]int16{}
	for _, f := range supported {
		if l := img.FeatureLevel(f.Name, f.DefaultLevel); l > 0 || f.Name == FeatureMetadataVersion {
			proposed[f.Name] = l
		}
	}
	for _, u := range updates {
		proposed[u.Name] = u.Level
	}
	var recs []Record
	for _, u := range updates {
		rec, code, msg := decideFeatureUpdate(img, nodeID, u, byName[u.Name], proposed)
		if code != 0 {
			return nil, &FeatureUpdateError{Feature: u.Name, Code: code, Message: msg}
		}
		if rec != nil {
			recs = append(recs, *rec)
		}
	}
	elrBefore := img.FeatureLevel(FeatureELRVersion, defaultELRLevel)
	if after, ok := proposed[FeatureELRVersion]; ok && after == 0 && elrBefore > 0 {
		// Eligible leader replicas turned off: no partition keeps them.
		forEachPartition(img, func(t *Topic, p Partition) {
			if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
				recs = append(recs, PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition, ELR: ptrTo([]int32{}), LastKnownELR: ptrTo([]int32{})})
			}
		})
	}
	return recs, nil
}

// defaultELRLevel is eligible.leader.replicas.version while the log holds
// no record for it: 1, as a Kafka 4.4 cluster is formatted.
const defaultELRLevel = 1

// decideFeatureUpdate judges one update (Kafka's
// FeatureControlManager.updateFeature): the record to write (nil for
// kraft.version, which samsa cannot change) or INVALID_UPDATE_VERSION and
// Kafka's message. A feature this node does not know has the range 0-0.
func decideFeatureUpdate(img *Image, nodeID int32, u FeatureUpdate, f SupportedFeature, proposed map[string]int16) (*FeatureLevelRecord, int16, string) {
	invalid := func(why string) (*FeatureLevelRecord, int16, string) {
		return nil, kerr.InvalidUpdateVersion.Code, fmt.Sprintf("Invalid update version %d for feature %s. %s", u.Level, u.Name, why)
	}
	if u.UpgradeType != UpgradeTypeUpgrade && u.UpgradeType != UpgradeTypeSafeDowngrade && u.UpgradeType != UpgradeTypeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	current := img.FeatureLevel(u.Name, f.DefaultLevel)
	if u.Level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	if u.Level < f.Min || u.Level > f.Max {
		if f.Max == 0 {
			return invalid(fmt.Sprintf("Local controller %d does not support this feature.", nodeID))
		}
		return invalid(fmt.Sprintf("Local controller %d only supports versions %d-%d", nodeID, f.Min, f.Max))
	}
	switch {
	case u.Level < current && u.UpgradeType == UpgradeTypeUpgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case u.Level > current && u.UpgradeType != UpgradeTypeUpgrade:
		return invalid("Can't downgrade to a newer version.")
	}
	rec := &FeatureLevelRecord{Name: u.Name, Level: u.Level}
	switch u.Name {
	case FeatureMetadataVersion:
		if u.Level < current && metadataChanged(u.Level, current) {
			why := "Refusing to perform the requested downgrade because it might delete metadata information."
			if u.UpgradeType == UpgradeTypeUnsafeDowngrade {
				why = "Unsafe metadata downgrade is not supported in this version."
			}
			return nil, kerr.InvalidUpdateVersion.Code, fmt.Sprintf("Unsupported metadata.version downgrade from %d to %d. %s", current, u.Level, why)
		}
		return rec, 0, ""
	case FeatureKRaftVersion:
		// Kafka upgrades the quorum's version (a static quorum to 1,
		// which allows voter changes) and never downgrades it. samsa's
		// quorums allow voter changes at either level, so the upgrade
		// only records the level.
		switch {
		case u.Level == current:
			return nil, 0, ""
		case u.UpgradeType != UpgradeTypeUpgrade:
			return invalid("Can't downgrade the version of this feature.")
		}
		return rec, 0, ""
	}
	for dep, need := range f.Dependencies[u.Level] {
		if have, ok := proposed[dep]; !ok || have < need {
			return invalid(fmt.Sprintf("%s could not be set to %d because it depends on %s level %d", u.Name, u.Level, dep, need))
		}
	}
	return rec, 0, ""
}

// metadataChangingVersions are the metadata.version levels that changed
// the metadata records (Kafka 4.4's MetadataVersion didMetadataChange):
// a downgrade across one of them could drop information, so Kafka
// refuses it.
var metadataChangingVersions = map[int16]bool{
	7: true, 8: true, 11: true, 13: true, 14: true, 15: true, 17: true,
	23: true, 30: true, 32: true, 33: true,
}

// metadataChanged reports whether a level in (low, high] changed the
// metadata records (Kafka's MetadataVersion.checkIfMetadataChanged).
func metadataChanged(low, high int16) bool {
	for v := high; v > low; v-- {
		if metadataChangingVersions[v] {
			return true
		}
	}
	return false
}

// elr is the eligible leader replicas policy in effect for img: off once
// eligible.leader.replicas.version was finalized at 0.
func (c *Controller) elr(img *Image) ELRPolicy {
	if img.FeatureLevel(FeatureELRVersion, defaultELRLevel) == 0 {
		return nil
	}
	return c.opts.EligibleLeaderReplicas
}
