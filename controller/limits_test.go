package controller

import (
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/samsa-broker/samsa/wire/wiretest"
)

// Regression (issue 11 item 1): CreateTopics with num_partitions =
// 2147483647 killed the process with "runtime: out of memory" in
// placeReplicas, even with validate_only; 1,000,000 partitions were
// accepted and wrote 1,000,101 records. Kafka 4.4 (KAFKA-17870) fails a
// request that asks for more than 10,000 partitions with POLICY_VIOLATION
// before allocating anything per partition, validate_only included.
func TestCreateTopicsPartitionsPerRequestLimit(t *testing.T) {
	c := newTestController(t, 3)
	for _, validateOnly := range []bool{true, false} {
		var results []CreateTopicResult
		var rerr *RequestError
		alloc := wiretest.Allocated(func() {
			results, rerr = c.CreateTopicsRequest([]CreateTopic{
				{Name: "ok", NumPartitions: 1, ReplicationFactor: 1},
				{Name: "huge", NumPartitions: math.MaxInt32, ReplicationFactor: 1},
			}, validateOnly)
		})
		if rerr == nil || rerr.Code != kerr.PolicyViolation.Code || rerr.Message != "Excessively large number of partitions per request." {
			t.Fatalf("validateOnly=%v: request error %+v", validateOnly, rerr)
		}
		for _, r := range results {
			if r.ErrorCode != kerr.PolicyViolation.Code || r.ErrorMessage != rerr.Message {
				t.Errorf("validateOnly=%v: %+v", validateOnly, r)
			}
		}
		if alloc > 1<<20 {
			t.Errorf("validateOnly=%v: rejecting the request allocated %d bytes", validateOnly, alloc)
		}
	}
	if n := len(c.Image().Topics); n != 0 {
		t.Fatalf("%d topics created", n)
	}

	// The limit counts -1 as the default, an assignment as its length and
	// ignores other non-positive counts; 10,000 is allowed, 10,001 is not.
	cases := []struct {
		name  string
		reqs  []CreateTopic
		fails bool
	}{
		{"sum 10000", []CreateTopic{{Name: "a", NumPartitions: 5000}, {Name: "b", NumPartitions: 5000}}, false},
		{"sum 10001", []CreateTopic{{Name: "a", NumPartitions: 5000}, {Name: "b", NumPartitions: 5000}, {Name: "c", NumPartitions: 1}}, true},
		{"default counts", []CreateTopic{{Name: "a", NumPartitions: 10000}, {Name: "b", NumPartitions: -1}}, true},
		{"negative ignored", []CreateTopic{{Name: "a", NumPartitions: 10000}, {Name: "b", NumPartitions: -5}, {Name: "c", NumPartitions: 0}}, false},
		{"assignment counts", []CreateTopic{{Name: "a", NumPartitions: 9999}, {Name: "b", NumPartitions: -1, Assignment: map[int32][]int32{0: {1}, 1: {1}}}}, true},
		{"overflowing sum", []CreateTopic{{Name: "a", NumPartitions: math.MaxInt32}, {Name: "b", NumPartitions: math.MaxInt32}, {Name: "c", NumPartitions: 2}}, true},
	}
	for _, tc := range cases {
		if got := CheckCreateTopicsPartitions(tc.reqs, 1) != nil; got != tc.fails {
			t.Errorf("%s: fails=%v, want %v", tc.name, got, tc.fails)
		}
	}
}

// Kafka's controller commits at most 10,000 records for one user
// operation; a CreateTopics that needs more (a topic record plus 10,000
// partition records) fails as a whole with POLICY_VIOLATION "Unable to
// perform excessively large batch operation.", also with validate_only.
func TestCreateTopicsRecordsPerRequestLimit(t *testing.T) {
	c := newTestController(t, 1)
	for _, validateOnly := range []bool{true, false} {
		results, rerr := c.CreateTopicsRequest([]CreateTopic{{Name: "a", NumPartitions: 10000, ReplicationFactor: 1}}, validateOnly)
		if rerr == nil || rerr.Code != kerr.PolicyViolation.Code || rerr.Message != "Unable to perform excessively large batch operation." {
			t.Fatalf("validateOnly=%v: %+v", validateOnly, rerr)
		}
		if results[0].ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("%+v", results)
		}
	}
	results, rerr := c.CreateTopicsRequest([]CreateTopic{{Name: "a", NumPartitions: 9999, ReplicationFactor: 1}}, false)
	if rerr != nil || results[0].ErrorCode != 0 {
		t.Fatalf("9999 partitions: %+v %+v", rerr, results)
	}
	if n := len(c.Image().Topics["a"].Partitions); n != 9999 {
		t.Fatalf("%d partitions", n)
	}
}

// Regression (issue 11 item 1): CreatePartitions to 1,000,000 (or ~8.4 M)
// partitions held the controller lock for minutes. Kafka 4.4 fails a
// request that adds more than 10,000 partitions in all with
// POLICY_VIOLATION "Excessively large number of additional partitions per
// request.", validate_only included, before placing anything.
func TestCreatePartitionsPerRequestLimit(t *testing.T) {
	c := newTestController(t, 3)
	c.CreateTopics([]CreateTopic{{Name: "a", NumPartitions: 1, ReplicationFactor: 1}, {Name: "b", NumPartitions: 2, ReplicationFactor: 1}}, false)
	for _, validateOnly := range []bool{true, false} {
		var results []CreatePartitionsResult
		var rerr *RequestError
		alloc := wiretest.Allocated(func() {
			results, rerr = c.CreatePartitionsRequest([]CreatePartitionsTopic{{Topic: "a", Count: 2}, {Topic: "b", Count: math.MaxInt32}}, validateOnly)
		})
		if rerr == nil || rerr.Code != kerr.PolicyViolation.Code || rerr.Message != "Excessively large number of additional partitions per request." {
			t.Fatalf("validateOnly=%v: %+v", validateOnly, rerr)
		}
		if len(results) != 2 || results[0].ErrorCode != kerr.PolicyViolation.Code || results[1].ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("%+v", results)
		}
		if alloc > 1<<20 {
			t.Errorf("validateOnly=%v: rejecting the request allocated %d bytes", validateOnly, alloc)
		}
		// The single-topic call takes the same path.
		if code, _ := c.CreatePartitions("a", math.MaxInt32, nil, validateOnly); code != kerr.PolicyViolation.Code {
			t.Fatalf("single topic: code %d", code)
		}
	}
	// Unknown topics, negative counts and counts that do not grow a topic
	// add nothing: 10,000 added in all passes and is committed at once.
	results, rerr := c.CreatePartitionsRequest([]CreatePartitionsTopic{
		{Topic: "a", Count: 5001}, {Topic: "b", Count: 5002}, {Topic: "nope", Count: 1 << 30}, {Topic: "x", Count: -1},
	}, false)
	if rerr != nil {
		t.Fatal(rerr)
	}
	want := []int16{0, 0, kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code}
	for i, r := range results {
		if r.ErrorCode != want[i] {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	img := c.Image()
	if len(img.Topics["a"].Partitions) != 5001 || len(img.Topics["b"].Partitions) != 5002 {
		t.Fatalf("partitions a=%d b=%d", len(img.Topics["a"].Partitions), len(img.Topics["b"].Partitions))
	}
}

// Options.MaxPartitions bounds the cluster's total, so repeated requests
// under the per-request limit cannot grow the metadata without end.
func TestMaxPartitionsPerCluster(t *testing.T) {
	c := newTestController(t, 1, func(o *Options) { o.MaxPartitions = 10 })
	res := c.CreateTopics([]CreateTopic{{Name: "a", NumPartitions: 6, ReplicationFactor: 1}, {Name: "b", NumPartitions: 5, ReplicationFactor: 1}, {Name: "c", NumPartitions: 4, ReplicationFactor: 1}}, false)
	if res[0].ErrorCode != 0 || res[1].ErrorCode != kerr.PolicyViolation.Code || res[2].ErrorCode != 0 {
		t.Fatalf("%+v", res)
	}
	if code, msg := c.CreatePartitions("a", 7, nil, false); code != kerr.PolicyViolation.Code {
		t.Fatalf("grow past the limit: %d %s", code, msg)
	}
	if code, msg := c.CreatePartitions("c", 4, nil, false); code != kerr.InvalidPartitions.Code {
		t.Fatalf("no growth: %d %s", code, msg)
	}
	if got := totalPartitions(c.Image()); got != 10 {
		t.Fatalf("%d partitions", got)
	}
}
