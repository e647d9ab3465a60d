package quorum

import (
	"errors"
	"io"
	"log/slog"

	"github.com/hashicorp/raft"

	"github.com/samsa-broker/samsa/controller"
)

// fsm is the Raft FSM: Apply decodes a committed entry and applies it to
// the controller.Machine, which queues the change for the Controller to
// publish. Nothing here touches files or the network; snapshots write the
// (immutable) image to the sink raft gives them.
type fsm struct {
	machine *controller.Machine
	logger  *slog.Logger
}

// Apply returns the Machine's result (nil or an error), which the leader's
// Propose receives through the ApplyFuture.
func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	err := f.machine.ApplyEntry(l.Data)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, controller.ErrStale):
		// A decision that raced a leader change; its proposer gets
		// NOT_CONTROLLER and retries. Every replica skips it alike.
		f.logger.Info("quorum: skipped a batch decided against a stale image", "index", l.Index, "err", err)
	default:
		// Every replica rejects the same entry the same way, so the images
		// stay equal; but a decision that does not apply is a bug.
		f.logger.Error("quorum: committed entry rejected", "index", l.Index, "err", err)
	}
	return err
}

// Snapshot captures the current image; Persist may run concurrently with
// later applies because images are immutable.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	return imageSnapshot{f.machine.Image()}, nil
}

// Restore replaces the image with a snapshot's (at start, or when the
// leader sends one to a follower that is too far behind).
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img, err := controller.ReadSnapshot(rc, f.machine.Empty())
	if err != nil {
		return err
	}
	f.machine.Restore(img)
	return nil
}

type imageSnapshot struct{ img *controller.Image }

func (s imageSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := controller.WriteSnapshot(sink, s.img); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (imageSnapshot) Release() {}
