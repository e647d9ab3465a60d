package faults

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestWholeClusterKillKeepsData is the regression test of finding 4 of
// docs/DURABILITY.md: every node is killed at once (a power cut) and all
// are restarted together. A node then starts with no metadata quorum, so
// its metadata image is empty until the quorum forms; the broker used to
// delete every partition log "not in metadata" against that empty image,
// and the cluster came back with no data. Every acknowledged record must
// be read back.
func TestWholeClusterKillKeepsData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := StartCluster(t, Config{Nodes: 3})
	ctx := context.Background()
	o := QueueOptions{Topic: "power-cut", Partitions: 2, Producers: 1, Interval: 2 * time.Millisecond, Acks: -1}
	if err := CreateTopic(ctx, c.Addrs(), o, 3); err != nil {
		t.Fatal(err)
	}
	q, err := StartQueue(c.Addrs(), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := pollUntil(ctx, time.Minute, func(context.Context) (bool, error) { return q.Acked() >= 500, nil }); err != nil {
		t.Fatal(err)
	}
	q.StopProducers()
	for _, n := range c.Nodes {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		wg.Go(func() { errs[i] = n.Restart(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	q.Stop()
	if err := q.FinalRead(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	r := Check(q.History())
	t.Logf("%s", r)
	if r.Acked < 500 || r.Lost.Count != 0 {
		t.Fatalf("after killing and restarting every node: %d of %d acknowledged records lost:\n%s", r.Lost.Count, r.Acked, r)
	}
}
