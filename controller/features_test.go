package controller

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// testFeatures are Kafka 4.4's supported ranges and fresh-cluster levels.
func testFeatures() []SupportedFeature {
	return []SupportedFeature{
		{Name: FeatureMetadataVersion, Min: 7, Max: 33, DefaultLevel: 33},
		{Name: FeatureKRaftVersion, Min: 0, Max: 1, DefaultLevel: 1},
		{Name: "transaction.version", Min: 0, Max: 2, DefaultLevel: 2},
		{Name: "group.version", Min: 0, Max: 1, DefaultLevel: 1},
		{Name: FeatureELRVersion, Min: 0, Max: 1, DefaultLevel: 1, Dependencies: map[int16]map[string]int16{1: {FeatureMetadataVersion: 23}}},
		{Name: "share.version", Min: 0, Max: 2, DefaultLevel: 2},
	}
}

// TestUpdateFeatures follows Kafka 4.4's FeatureControlManager: downgrades
// and upgrades are written as FeatureLevelRecords, validate-only and
// failed batches write nothing, level 0 removes a feature, and the levels
// survive a snapshot.
func TestUpdateFeatures(t *testing.T) {
	c := newTestController(t, 1)
	defer c.Close()
	fs := testFeatures()
	tv := func() int16 { return c.Image().FeatureLevel("transaction.version", 2) }

	if err := c.UpdateFeatures([]FeatureUpdate{{Name: "transaction.version", Level: 1, UpgradeType: UpgradeTypeSafeDowngrade}}, true, fs); err != nil {
		t.Fatalf("validate only: %+v", err)
	}
	if tv() != 2 || len(c.Image().Features) != 0 {
		t.Fatalf("validate only changed the image: %v", c.Image().Features)
	}
	// A batch with one failing update writes nothing.
	err := c.UpdateFeatures([]FeatureUpdate{
		{Name: "transaction.version", Level: 1, UpgradeType: UpgradeTypeSafeDowngrade},
		{Name: "group.version", Level: 0, UpgradeType: UpgradeTypeUpgrade},
	}, false, fs)
	if err == nil || err.Feature != "group.version" || err.Code != kerr.InvalidUpdateVersion.Code ||
		err.Message != "Invalid update version 0 for feature group.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade." {
		t.Fatalf("mixed batch: %+v", err)
	}
	if tv() != 2 {
		t.Fatal("a failed batch changed transaction.version")
	}
	off := c.Image().Offset
	if err := c.UpdateFeatures([]FeatureUpdate{{Name: "transaction.version", Level: 1, UpgradeType: UpgradeTypeSafeDowngrade},
		{Name: "group.version", Level: 0, UpgradeType: UpgradeTypeUnsafeDowngrade}}, false, fs); err != nil {
		t.Fatalf("downgrade: %+v", err)
	}
	img := c.Image()
	if img.Offset != off+2 || tv() != 1 || img.FeatureLevel("group.version", 1) != 0 {
		t.Fatalf("after downgrade: offset %d (was %d), %v", img.Offset, off, img.Features)
	}
	if err := c.UpdateFeatures([]FeatureUpdate{{Name: "transaction.version", Level: 2, UpgradeType: UpgradeTypeSafeDowngrade}}, false, fs); err == nil ||
		!strings.HasSuffix(err.Message, "Can't downgrade to a newer version.") {
		t.Fatalf("downgrade to a newer level: %+v", err)
	}
	if err := c.UpdateFeatures([]FeatureUpdate{{Name: "transaction.version", Level: 2, UpgradeType: UpgradeTypeUpgrade}}, false, fs); err != nil || tv() != 2 {
		t.Fatalf("upgrade: %+v, level %d", err, tv())
	}
	// Asking for the current level writes a record, as Kafka does.
	off = c.Image().Offset
	if err := c.UpdateFeatures([]FeatureUpdate{{Name: "transaction.version", Level: 2, UpgradeType: UpgradeTypeUpgrade}}, false, fs); err != nil || c.Image().Offset != off+1 {
		t.Fatalf("same level: %+v, offset %d (was %d)", err, c.Image().Offset, off)
	}

	// Levels are in snapshots.
	var recs []Record
	for _, r := range ImageRecords(c.Image()) {
		if f, ok := r.(FeatureLevelRecord); ok {
			recs = append(recs, f)
		}
	}
	want := []Record{FeatureLevelRecord{Name: "group.version", Level: 0}, FeatureLevelRecord{Name: "transaction.version", Level: 2}}
	if !slices.Equal(recs, want) {
		t.Fatalf("snapshot records %v, want %v", recs, want)
	}
}

// TestUpdateFeaturesRefusals: Kafka 4.4's refusals and messages.
func TestUpdateFeaturesRefusals(t *testing.T) {
	c := newTestController(t, 1)
	defer c.Close()
	fs := testFeatures()
	for _, tc := range []struct {
		u    FeatureUpdate
		want string // "" passes
	}{
		{FeatureUpdate{"transaction.version", 1, 0}, "Invalid update version 1 for feature transaction.version. The controller does not support the given upgrade type."},
		{FeatureUpdate{"transaction.version", -1, 2}, "Invalid update version -1 for feature transaction.version. A feature version cannot be less than 0."},
		{FeatureUpdate{"transaction.version", 3, 1}, "Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 0-2"},
		{FeatureUpdate{"no.such", 1, 1}, "Invalid update version 1 for feature no.such. Local controller 1 does not support this feature."},
		{FeatureUpdate{"no.such", 0, 1}, ""},
		{FeatureUpdate{FeatureMetadataVersion, 32, 2}, "Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the requested downgrade because it might delete metadata information."},
		{FeatureUpdate{FeatureMetadataVersion, 22, 3}, "Unsupported metadata.version downgrade from 33 to 22. Unsafe metadata downgrade is not supported in this version."},
		{FeatureUpdate{FeatureMetadataVersion, 33, 1}, ""},
		{FeatureUpdate{FeatureKRaftVersion, 0, 2}, "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature."},
		{FeatureUpdate{FeatureKRaftVersion, 1, 1}, ""},
	} {
		err := c.UpdateFeatures([]FeatureUpdate{tc.u}, true, fs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %+v", tc.u, err)
		case tc.want != "" && (err == nil || err.Code != kerr.InvalidUpdateVersion.Code || err.Message != tc.want):
			t.Errorf("%+v: %+v, want %q", tc.u, err, tc.want)
		}
	}
	// kraft.version of a static quorum (0) is upgraded to 1, as Kafka
	// 4.4 does, and never downgraded.
	static := testFeatures()
	static[1].DefaultLevel = 0
	if recs, fail := decideUpdateFeatures(EmptyImage("c", 1), 1, []FeatureUpdate{{Name: FeatureKRaftVersion, Level: 1, UpgradeType: UpgradeTypeUpgrade}}, static); fail != nil ||
		!slices.Equal(recs, []Record{FeatureLevelRecord{Name: FeatureKRaftVersion, Level: 1}}) {
		t.Fatalf("kraft.version upgrade: %v %+v", recs, fail)
	}
	if !metadataChanged(22, 23) || metadataChanged(24, 29) || !metadataChanged(24, 30) {
		t.Error("metadataChanged does not follow Kafka's didMetadataChange flags")
	}
	// A dependency: eligible.leader.replicas.version 1 needs
	// metadata.version 23 (4.0-IV1).
	if _, fail := decideUpdateFeatures(&Image{Features: map[string]int16{FeatureMetadataVersion: 22, FeatureELRVersion: 0}}, 1,
		[]FeatureUpdate{{Name: FeatureELRVersion, Level: 1, UpgradeType: UpgradeTypeUpgrade}}, fs); fail == nil ||
		fail.Message != "Invalid update version 1 for feature eligible.leader.replicas.version. eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23" {
		t.Fatalf("ELR over metadata.version 22: %+v", fail)
	}
}

// TestUpdateFeaturesELR: eligible.leader.replicas.version 0 clears every
// partition's eligible leader replicas and turns them off; 1 turns them
// back on.
func TestUpdateFeaturesELR(t *testing.T) {
	c := newTestController(t, 2, func(o *Options) { o.EligibleLeaderReplicas = func(*Topic) int { return 1 } })
	defer c.Close()
	if r := c.CreateTopics([]CreateTopic{{Name: "t", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2}}}}, false)[0]; r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	fence := func(id int32, fenced bool) {
		t.Helper()
		if err := c.FenceBroker(id, fenced); err != nil {
			t.Fatal(err)
		}
	}
	fence(2, true)
	fence(1, true)
	if p := c.Image().Topics["t"].Partitions[0]; !slices.Equal(p.ELR, []int32{1}) {
		t.Fatalf("with ELR: %+v", p)
	}
	if err := c.UpdateFeatures([]FeatureUpdate{{Name: FeatureELRVersion, Level: 0, UpgradeType: UpgradeTypeSafeDowngrade}}, false, testFeatures()); err != nil {
		t.Fatal(err)
	}
	if p := c.Image().Topics["t"].Partitions[0]; len(p.ELR) != 0 || len(p.LastKnownELR) != 0 {
		t.Fatalf("ELR off, still %+v", p)
	}
	fence(1, false)
	fence(2, false)
	if r := c.CreateTopics([]CreateTopic{{Name: "u", NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: {1, 2}}}}, false)[0]; r.ErrorCode != 0 {
		t.Fatalf("%+v", r)
	}
	fence(2, true)
	fence(1, true)
	// Without ELR the last ISR member stays in the ISR.
	if p := c.Image().Topics["u"].Partitions[0]; len(p.ELR) != 0 || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("ELR off: %+v", p)
	}
}
