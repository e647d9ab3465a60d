package quorum

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/samsa-broker/samsa/controller"
)

// ImportFileLog imports the metadata.log at path, written by a
// single-node samsa before the Raft quorum, into q: once q is the active
// controller, every record of the file is proposed as one entry on the
// empty image, and the file is renamed to path+".imported" (kept as a
// backup, never read again). Nothing happens when path does not exist.
//
// Crash safety: the import is one entry, so it is committed whole or not
// at all. A crash after the commit and before the rename leaves both; the
// next start finds a non-empty image and only renames. Only a quorum of
// one may import: the file holds one node's history.
func ImportFileLog(ctx context.Context, q *Quorum, path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("quorum: import %s: %w", path, err)
	}
	if len(q.opts.Voters) != 1 {
		return fmt.Errorf("quorum: %s is the metadata of a single-node samsa; it can only be imported into a quorum of one voter, not %d", path, len(q.opts.Voters))
	}
	if err := q.WaitLeading(ctx); err != nil {
		return err
	}
	if img := q.machine.Image(); img.Offset == -1 {
		log, err := controller.OpenFileLog(path)
		if err != nil {
			return fmt.Errorf("quorum: import: %w", err)
		}
		if cut := log.Truncated(); cut > 0 {
			q.logger.Error("metadata log: cut a torn last append (a crash during a metadata change); that change is lost", "bytes", cut)
		}
		var recs []controller.Record
		err = log.Replay(func(_ int64, rec controller.Record) error {
			recs = append(recs, rec)
			return nil
		})
		log.Close()
		if err != nil {
			return fmt.Errorf("quorum: import %s: %w", path, err)
		}
		if len(recs) > 0 {
			if err := q.Propose(-1, recs); err != nil {
				return fmt.Errorf("quorum: import %s: %w", path, err)
			}
		}
		q.logger.Info("quorum: imported the single-node metadata log", "path", path, "records", len(recs))
	}
	if err := os.Rename(path, path+".imported"); err != nil {
		return fmt.Errorf("quorum: import: %w", err)
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("quorum: import: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("quorum: import: sync dir: %w", err)
	}
	return nil
}
