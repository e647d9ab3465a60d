package broker

import (
	"log/slog"
	"testing"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
	"github.com/samsa-broker/samsa/storage/vfs"
)

// Regression (issue 11 item 8): losing the producer-id-block file made the
// broker hand out producer id 0 again, and the new producer's batches were
// taken for duplicates of an old producer's and never written. Ids now come
// from blocks committed in the metadata log: losing every broker-local file
// but the metadata log never repeats an id, and the old file's value is
// migrated (never gone below) and the file removed.
func TestProducerIDsNeverRepeat(t *testing.T) {
	mlog := controller.NewMemLog()
	newCtrl := func() *controller.Controller {
		c, err := controller.New(controller.Options{NodeID: 1, ClusterID: "c", Log: mlog, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.RegisterBroker(controller.Broker{ID: 1, Host: "h", Port: 9092}); err != nil {
			t.Fatal(err)
		}
		return c
	}
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/data"); err != nil {
		t.Fatal(err)
	}
	// An older samsa recorded that ids below 4200 were handed out.
	if err := writeBlockFile(fsys, "/data/"+storage.ProducerIDBlockFile, "0\n4200\n"); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	take := func(p *producerIDs, n int) {
		for range n {
			id, err := p.Next()
			if err != nil {
				t.Fatal(err)
			}
			if seen[id] || id < 4200 {
				t.Fatalf("producer id %d handed out again or below the migrated floor", id)
			}
			seen[id] = true
		}
	}
	p, err := newProducerIDs(localAllocator(newCtrl(), 1), fsys, "/data")
	if err != nil {
		t.Fatal(err)
	}
	if fsys.Exists("/data/" + storage.ProducerIDBlockFile) {
		t.Fatal("the block file was not removed after migration")
	}
	take(p, 1500)
	// Restarts: a new controller over the same metadata log, no block file.
	for range 3 {
		p, err = newProducerIDs(localAllocator(newCtrl(), 1), fsys, "/data")
		if err != nil {
			t.Fatal(err)
		}
		take(p, 10)
	}
}

func writeBlockFile(fsys vfs.FS, path, text string) error {
	f, err := fsys.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt([]byte(text), 0); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

func localAllocator(c *controller.Controller, id int32) func(int64) (int64, int64, error) {
	return func(floor int64) (int64, int64, error) { return c.AllocateProducerIDs(id, floor) }
}
