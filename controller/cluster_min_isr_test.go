package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func withELR(o *Options) { o.EligibleLeaderReplicas = func(*Topic) int { return 1 } }

// TestEnsureClusterMinISRFresh: a fresh cluster gets BROKER ""
// min.insync.replicas with the controller's static value, once (Kafka
// 4.4's ActivationRecordsGenerator on an empty log).
func TestEnsureClusterMinISRFresh(t *testing.T) {
	c := newTestController(t, 0, withELR)
	written, err := c.EnsureClusterMinISR(2)
	if err != nil || !written {
		t.Fatalf("EnsureClusterMinISR = %v, %v; want written", written, err)
	}
	if got := c.Image().BrokerConfigs[""]["min.insync.replicas"]; got != "2" {
		t.Fatalf("cluster-level min.insync.replicas = %q, want 2", got)
	}
	offset := c.Image().Offset
	if written, err := c.EnsureClusterMinISR(3); err != nil || written {
		t.Fatalf("second EnsureClusterMinISR = %v, %v; want nothing written", written, err)
	}
	if got := c.Image().BrokerConfigs[""]["min.insync.replicas"]; got != "2" || c.Image().Offset != offset {
		t.Fatalf("after the second call: %q at offset %d, want 2 at %d", got, c.Image().Offset, offset)
	}
}

// TestEnsureClusterMinISRWithoutELR: with eligible leader replicas off
// (eligible.leader.replicas.version 0) nothing is written, as Kafka
// writes the record only with the feature.
func TestEnsureClusterMinISRWithoutELR(t *testing.T) {
	c := newTestController(t, 0)
	if written, err := c.EnsureClusterMinISR(2); err != nil || written {
		t.Fatalf("EnsureClusterMinISR = %v, %v; want nothing", written, err)
	}
	if _, ok := c.Image().BrokerConfigs[""]["min.insync.replicas"]; ok {
		t.Fatal("cluster-level min.insync.replicas written without ELR")
	}
}

// TestEnsureClusterMinISRUpgrade: metadata of an older samsa (ELR on, no
// cluster-level value, broker-level values set) gets the cluster-level
// value and loses the broker-level ones, as Kafka's feature upgrade does
// (maybeGenerateElrSafetyRecords); other settings stay.
func TestEnsureClusterMinISRUpgrade(t *testing.T) {
	c := newTestController(t, 2) // no ELR: the older build's alters pass
	for _, b := range []string{"1", "2"} {
		if code, msg := c.AlterBrokerConfigs(b, []ConfigOp{{Name: "min.insync.replicas", Value: ptr("3")}, {Name: "background.threads", Value: ptr("4")}}, false, nil); code != 0 {
			t.Fatalf("alter broker %s: %d %s", b, code, msg)
		}
	}
	if code, msg := c.AlterBrokerConfigs("", []ConfigOp{{Name: "log.cleaner.threads", Value: ptr("2")}}, false, nil); code != 0 {
		t.Fatalf("alter cluster level: %d %s", code, msg)
	}
	recs, removed := decideClusterMinISR(c.Image(), 2)
	if len(recs) != 3 || len(removed) != 2 || removed[0] != "1" || removed[1] != "2" {
		t.Fatalf("decideClusterMinISR = %+v, removed %v; want the cluster record and two deletions", recs, removed)
	}
	c.opts.EligibleLeaderReplicas = func(*Topic) int { return 1 } // the upgraded build
	if written, err := c.EnsureClusterMinISR(2); err != nil || !written {
		t.Fatalf("EnsureClusterMinISR = %v, %v", written, err)
	}
	img := c.Image()
	if got := img.BrokerConfigs[""]; got["min.insync.replicas"] != "2" || got["log.cleaner.threads"] != "2" {
		t.Fatalf("cluster level = %v", got)
	}
	for _, b := range []string{"1", "2"} {
		if _, ok := img.BrokerConfigs[b]["min.insync.replicas"]; ok || img.BrokerConfigs[b]["background.threads"] != "4" {
			t.Fatalf("broker %s configs = %v; want min.insync.replicas gone, background.threads kept", b, img.BrokerConfigs[b])
		}
	}
}

// TestMinISRAlterRefusedWithELR: Kafka 4.4's answers (checked on
// kafka-ref with kafka-configs.sh): a broker's own min.insync.replicas
// cannot be set nor deleted (even when unset), the cluster-level one
// cannot be deleted, and may be set; validate-only requests are refused
// the same way.
func TestMinISRAlterRefusedWithELR(t *testing.T) {
	c := newTestController(t, 1, withELR)
	if _, err := c.EnsureClusterMinISR(1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, broker string
		ops          []ConfigOp
		validateOnly bool
		code         int16
		msg          string
	}{
		{"broker-set", "1", []ConfigOp{{Name: "min.insync.replicas", Value: ptr("2")}}, false, kerr.InvalidConfig.Code, msgBrokerMinISRAltered},
		{"broker-set-validate", "1", []ConfigOp{{Name: "min.insync.replicas", Value: ptr("2")}}, true, kerr.InvalidConfig.Code, msgBrokerMinISRAltered},
		{"broker-delete-unset", "1", []ConfigOp{{Name: "min.insync.replicas", Op: OpDelete}}, false, kerr.InvalidConfig.Code, msgBrokerMinISRAltered},
		{"broker-other", "1", []ConfigOp{{Name: "background.threads", Value: ptr("4")}}, false, 0, ""},
		{"cluster-delete", "", []ConfigOp{{Name: "min.insync.replicas", Op: OpDelete}}, false, kerr.InvalidConfig.Code, msgClusterMinISRRemoved},
		{"cluster-set", "", []ConfigOp{{Name: "min.insync.replicas", Value: ptr("3")}}, false, 0, ""},
	} {
		code, msg := c.AlterBrokerConfigs(tc.broker, tc.ops, tc.validateOnly, nil)
		if code != tc.code || msg != tc.msg {
			t.Errorf("%s: %d %q, want %d %q", tc.name, code, msg, tc.code, tc.msg)
		}
	}
	if got := c.Image().BrokerConfigs[""]["min.insync.replicas"]; got != "3" {
		t.Fatalf("cluster-level min.insync.replicas = %q, want 3", got)
	}
	if _, ok := c.Image().BrokerConfigs["1"]["min.insync.replicas"]; ok {
		t.Fatal("broker-level min.insync.replicas was written")
	}
}

// TestClusterMinISRKeepsELR: writing the first cluster-level value (and
// dropping broker-level ones) clears no eligible leader replicas, as
// Kafka's activation and ELR upgrade do not; a later change of the
// cluster-level value clears every topic's, as Kafka's ClearElrRecord.
func TestClusterMinISRKeepsELR(t *testing.T) {
	one := "1"
	img := &Image{
		BrokerConfigs: map[string]map[string]string{"2": {"min.insync.replicas": "2"}},
		Topics: map[string]*Topic{"t": {Name: "t", ID: Uuid{7}, Partitions: []Partition{
			{Partition: 0, Replicas: []int32{1, 2, 3}, Leader: -1, ELR: []int32{2, 3}, LastKnownELR: []int32{1}}}}},
	}
	recs, _ := decideClusterMinISR(img, 1)
	if len(recs) != 2 {
		t.Fatalf("decideClusterMinISR = %+v", recs)
	}
	if clears := elrClears(img, recs); len(clears) != 0 {
		t.Fatalf("the first cluster-level value clears %+v", clears)
	}
	img.BrokerConfigs = map[string]map[string]string{"": {"min.insync.replicas": "2"}}
	change := []Record{ConfigRecord{ResourceType: ConfigResourceBroker, Name: "min.insync.replicas", Value: &one}}
	if clears := elrClears(img, change); len(clears) != 1 {
		t.Fatalf("a cluster-level change clears %+v, want the one partition", clears)
	}
}
