package quorum

import (
	"context"
	"time"

	"errors"
	"fmt"
	"github.com/hashicorp/raft"
	"os"
	"path/filepath"
	"testing"

	"github.com/samsa-broker/samsa/controller"
)

// TestDamagedStore: raft.db with any one 4 KiB page overwritten by garbage
// either opens with the same image or is refused with ErrCorrupt; it never
// crashes the process (raft-boltdb panicked with an index out of range, and
// bbolt faulted outside its mmap, on such files).
func TestDamagedStore(t *testing.T) {
	dir := t.TempDir()
	q, trans := openOne(t, dir)
	if err := q.WaitLeading(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		v := fmt.Sprint(i)
		rec := controller.ConfigRecord{ResourceType: controller.ConfigResourceBroker, Name: "x" + v, Value: &v}
		if err := q.Propose(q.Machine().Image().Offset, []controller.Record{rec}); err != nil {
			t.Fatal(err)
		}
	}
	want := q.Machine().Image().Offset
	q.Close()
	trans.Close()
	good, err := os.ReadFile(filepath.Join(dir, "raft.db"))
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	opened, refused := 0, 0
	for off := 0; off < len(good); off += page {
		bad := append([]byte(nil), good...)
		for i := off; i < min(off+page, len(bad)); i++ {
			bad[i] = byte(i*7 + 0xa5)
		}
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "raft.db"), bad, 0o600); err != nil {
			t.Fatal(err)
		}
		q, trans, err := openOneErr(d)
		if err != nil {
			if !errors.Is(err, controller.ErrCorrupt) {
				t.Fatalf("page %d damaged: %v, want ErrCorrupt", off/page, err)
			}
			refused++
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err = q.WaitLeading(ctx)
		cancel()
		if err == nil && q.Machine().Image().Offset != want {
			t.Logf("page %d damaged: opened at offset %d, want %d", off/page, q.Machine().Image().Offset, want)
		}
		opened++
		q.Close()
		trans.Close()
	}
	t.Logf("%d pages: %d damaged files refused, %d opened", len(good)/page, refused, opened)
}

func openOneErr(dir string) (*Quorum, *raft.InmemTransport, error) {
	_, trans := raft.NewInmemTransport("one")
	q, err := Open(Options{NodeID: 1, ClusterID: "c", Dir: dir, Voters: []Voter{{1, "one"}}, Transport: trans, Logger: testLogger()})
	if err != nil {
		trans.Close()
		return nil, nil, err
	}
	return q, trans, nil
}

// TestDamagedObserverStoreRefetched: a broker-only node (a Raft observer)
// whose raft.db is damaged does not refuse to start: its Raft state is
// moved aside (nothing deleted) and it fetches the metadata log from the
// active controller again, ending with the leader's image. A voter with a
// damaged store still refuses (TestDamagedStore): it must not forget its
// vote.
func TestDamagedObserverStoreRefetched(t *testing.T) {
	leaderDir, obsDir := t.TempDir(), filepath.Join(t.TempDir(), "raft")
	leader, ltrans := openOne(t, leaderDir)
	defer func() { leader.Close(); ltrans.Close() }()
	if err := leader.WaitLeading(t.Context()); err != nil {
		t.Fatal(err)
	}
	openObs := func() (*Quorum, *raft.InmemTransport) {
		t.Helper()
		_, otrans := raft.NewInmemTransport("obs")
		ltrans.Connect("obs", otrans)
		otrans.Connect("one", ltrans)
		q, err := Open(Options{NodeID: 2, ClusterID: "c", Dir: obsDir, Voters: []Voter{{1, "one"}}, Observer: true, Transport: otrans, Logger: testLogger()})
		if err != nil {
			t.Fatalf("open observer: %v", err)
		}
		return q, otrans
	}
	propose := func(n int) {
		t.Helper()
		for i := range n {
			v := fmt.Sprint(i)
			rec := controller.ConfigRecord{ResourceType: controller.ConfigResourceBroker, Name: "x" + v, Value: &v}
			if err := leader.Propose(leader.Machine().Image().Offset, []controller.Record{rec}); err != nil {
				t.Fatal(err)
			}
		}
	}
	caughtUp := func(obs *Quorum) {
		t.Helper()
		want := leader.Machine().Image().Offset
		waitFor(t, 30*time.Second, fmt.Sprintf("the observer at the leader's offset %d", want), func() bool {
			return obs.Machine().Image().Offset == want
		})
	}
	obs, otrans := openObs()
	if err := leader.AddObserver(2, "obs"); err != nil {
		t.Fatal(err)
	}
	propose(20)
	caughtUp(obs)
	obs.Close()
	otrans.Close()

	db := filepath.Join(obsDir, "raft.db")
	good, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), good...)
	for i := range min(2*4096, len(bad)) {
		bad[i] = byte(i*7 + 0xa5) // both meta pages: bbolt refuses the file
	}
	if err := os.WriteFile(db, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	propose(5)
	obs, otrans = openObs()
	defer func() { obs.Close(); otrans.Close() }()
	caughtUp(obs)
	aside, _ := filepath.Glob(obsDir + ".damaged-*")
	if len(aside) != 1 {
		t.Fatalf("damaged state set aside as %v, want one dir", aside)
	}
	if kept, err := os.ReadFile(filepath.Join(aside[0], "raft.db")); err != nil || len(kept) != len(bad) {
		t.Fatalf("the damaged raft.db was not kept: %v", err)
	}
}
