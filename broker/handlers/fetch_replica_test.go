package handlers

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
	"github.com/samsa-broker/samsa/wire"
)

// TestNewFetchClient: Fetch v11 is where Kafka's ClientMetadata starts,
// so where a follower may serve a consumer and the leader may redirect it;
// earlier versions read the leader only.
func TestNewFetchClient(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	req.Rack = "r2"
	for _, tc := range []struct {
		version int16
		want    fetchClient
	}{
		{4, fetchClient{}},
		{10, fetchClient{}},
		{11, fetchClient{anyReplica: true, rack: "r2"}},
		{18, fetchClient{anyReplica: true, rack: "r2"}},
	} {
		if got := newFetchClient(req, tc.version); got != tc.want {
			t.Errorf("v%d: %+v, want %+v", tc.version, got, tc.want)
		}
	}
	req.Rack = ""
	if got := newFetchClient(req, 11); got != (fetchClient{anyReplica: true}) {
		t.Errorf("v11 without rack: %+v", got)
	}
}

// TestSessionRespondsToRedirect: an incremental fetch session leaves out a
// partition with nothing new, but never one the leader redirects (Kafka's
// CachedPartition.maybeUpdateResponseData: a preferred read replica must
// be answered), whose offsets are those the client was already sent.
func TestSessionRespondsToRedirect(t *testing.T) {
	k := sessionKey{topic: "t", partition: 0}
	sp := &sessionPartition{sentHighWatermark: 10, sentLogStart: 0, sentLastStable: 10}
	fc := &fetchContext{incremental: true, parts: map[sessionKey]*sessionPartition{k: sp}}
	same := fetchResult{highWatermark: 10, logStart: 0, lastStable: 10, leader: -1, leaderEpoch: -1}
	if fc.respond(k, &same) {
		t.Fatal("an unchanged partition was answered in an incremental fetch")
	}
	redirect := same
	redirect.redirect, redirect.readReplica = true, 2
	if !fc.respond(k, &redirect) {
		t.Fatal("a redirected partition was left out of an incremental fetch")
	}
}

// TestRedirectResult: the leader's answer for a redirected partition has
// no records, its own offsets, and nothing for a long poll to watch.
func TestRedirectResult(t *testing.T) {
	logs, err := storage.OpenManager(storage.ManagerOptions{FS: vfs.NewMem(), Dirs: []string{"/d"}, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	l, err := logs.CreateLog(storage.TopicPartition{Topic: "t"}, [16]byte{1}, storage.DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	batch, err := wire.EncodeBatch(wire.BatchSpec{ProducerID: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli(),
		Records: []wire.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(batch); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(2)
	res := redirectResult(l, 3)
	if !res.redirect || res.readReplica != 3 || res.size() != 0 || res.log != nil || res.code != 0 ||
		res.highWatermark != 2 || res.lastStable != 2 || res.logStart != 0 || res.leader != -1 || res.leaderEpoch != -1 {
		t.Fatalf("redirectResult: %+v", res)
	}
}
