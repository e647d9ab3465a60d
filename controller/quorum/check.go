package quorum

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/samsa-broker/samsa/controller"
)

// checkStore verifies the bolt file at path page by page before raft-boltdb
// opens it: raft-boltdb and bbolt panic on some damaged pages (an index
// out of range reading the last index), so a damaged raft.db is found here
// and reported as controller.ErrCorrupt instead of crashing the process.
// A missing file is fine (a new quorum).
func checkStore(path string) (err error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	// A damaged page can make bbolt read outside its mmap; with
	// SetPanicOnFault that is a panic recovered below, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", controller.ErrCorrupt, path, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("%w: %s: %w", controller.ErrCorrupt, path, err)
	}
	defer db.Close()
	// Read every key of every bucket on this goroutine (bbolt's tx.Check
	// runs on a goroutine of its own, out of reach of SetPanicOnFault).
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error { return nil })
		})
	})
	if err != nil {
		return fmt.Errorf("%w: %s: %w", controller.ErrCorrupt, path, err)
	}
	return nil
}

// recoverOpen turns a panic of the raft libraries while opening into an
// error wrapping controller.ErrCorrupt.
func recoverOpen(what string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%w: %s: %v", controller.ErrCorrupt, what, r)
	}
}
