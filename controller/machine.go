package controller

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
)

// Machine is the metadata state machine: it applies committed batches of
// records to the Image, in log order, and queues each change for the
// Controller to publish. It is deterministic and does no IO, so it can be
// the apply step of a replicated log (controller/quorum wraps it in a Raft
// FSM): every node that applies the same entries holds the same image.
//
// Publishing is separate from applying: the change (prev, next) is queued,
// and the Controller delivers it to OnChange and makes it visible through
// Controller.Image on its own time, never inside the apply step.
type Machine struct {
	clusterID string
	nodeID    int32
	pending   chan struct{} // capacity 1: a change was queued

	mu struct {
		sync.Mutex
		img   *Image
		queue []change // applied, not yet published
	}
}

type change struct{ prev, next *Image }

// NewMachine returns a machine holding the empty image.
func NewMachine(clusterID string, nodeID int32) *Machine {
	m := &Machine{clusterID: clusterID, nodeID: nodeID, pending: make(chan struct{}, 1)}
	m.mu.img = EmptyImage(clusterID, nodeID)
	return m
}

// Image returns the newest applied image. It may be ahead of the published
// one (Controller.Image): decisions read this one.
func (m *Machine) Image() *Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.img
}

// Empty returns the image with no records applied, as this machine starts.
func (m *Machine) Empty() *Image { return EmptyImage(m.clusterID, m.nodeID) }

// Apply applies recs, decided against the image at offset base, as one
// atomic batch. A batch whose base is not the current image's offset was
// decided against an image that is no longer current (a leader change in
// between) and is rejected with ErrStale; a batch the image cannot apply
// is rejected with ErrApply. A rejected batch changes nothing, and since
// every replica holds the same image, every replica rejects it the same way.
func (m *Machine) Apply(base int64, recs []Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.mu.img
	if base != prev.Offset {
		return fmt.Errorf("%w: batch decided at offset %d, image at %d", ErrStale, base, prev.Offset)
	}
	if len(recs) == 0 {
		return nil
	}
	next, err := applyBatch(prev, prev.Offset+1, recs)
	if err != nil {
		return err
	}
	m.setLocked(next)
	return nil
}

// ApplyEntry decodes an entry written by EncodeEntry and applies it (see
// Apply). An entry that does not decode is rejected with ErrCorrupt.
func (m *Machine) ApplyEntry(data []byte) error {
	base, recs, err := DecodeEntry(data)
	if err != nil {
		return err
	}
	return m.Apply(base, recs)
}

// Restore replaces the image (a snapshot was installed) and queues the
// change from the current image to img.
func (m *Machine) Restore(img *Image) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(img)
}

// REQUIRES: m.mu held.
func (m *Machine) setLocked(next *Image) {
	m.mu.queue = append(m.mu.queue, change{m.mu.img, next})
	m.mu.img = next
	select {
	case m.pending <- struct{}{}:
	default:
	}
}

// pop removes the oldest unpublished change.
func (m *Machine) pop() (change, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.mu.queue) == 0 {
		return change{}, false
	}
	ch := m.mu.queue[0]
	m.mu.queue[0] = change{}
	m.mu.queue = m.mu.queue[1:]
	return ch, true
}

// Entry format (version 1), one per replicated log entry:
//
//	version  uint8  1
//	base     int64  offset of the image the records were decided against (-1: empty)
//	count    uint32 number of frames
//	frames          one per record, as in the FileLog (length, crc, version, type, payload)
//
// Every byte must belong to a complete frame with a matching CRC: a
// committed entry is never torn, so anything else is corruption.
const (
	entryVersion    = uint8(1)
	entryHeaderSize = 1 + 8 + 4
)

// EncodeEntry returns the replicated-log entry of a batch decided against
// the image at offset base.
func EncodeEntry(base int64, recs []Record) ([]byte, error) {
	buf := make([]byte, 0, 256)
	buf = append(buf, entryVersion)
	buf = binary.BigEndian.AppendUint64(buf, uint64(base))
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(recs)))
	for _, rec := range recs {
		var err error
		if buf, err = appendFrame(buf, rec); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// DecodeEntry parses an entry written by EncodeEntry.
func DecodeEntry(data []byte) (base int64, recs []Record, err error) {
	if len(data) < entryHeaderSize {
		return 0, nil, fmt.Errorf("%w: entry of %d bytes", ErrCorrupt, len(data))
	}
	if data[0] != entryVersion {
		return 0, nil, fmt.Errorf("%w: entry version %d", ErrUnsupportedVersion, data[0])
	}
	base = int64(binary.BigEndian.Uint64(data[1:]))
	count := int64(binary.BigEndian.Uint32(data[9:]))
	frames := data[entryHeaderSize:]
	valid, n, err := scanFrames(bytes.NewReader(frames), func(_ int64, rec Record) error {
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	if n != count {
		return 0, nil, fmt.Errorf("%w: entry has %d of %d records", ErrCorrupt, n, count)
	}
	if valid != int64(len(frames)) {
		return 0, nil, fmt.Errorf("%w: entry has %d bytes after its last valid frame", ErrCorrupt, int64(len(frames))-valid)
	}
	return base, recs, nil
}
