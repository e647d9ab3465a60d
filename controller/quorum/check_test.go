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
