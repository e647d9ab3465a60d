package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/samsa-broker/samsa/storage/vfs"
)

// ProducerIDBlockFile is the file, in the first log dir, that records the
// end of the last block of producer ids handed out.
//
// Format (version 0, text, like the offset checkpoints):
//
//	0
//	<next unallocated producer id>
//
// Migration: a new version must still read version 0; the value only ever
// grows, so a newer reader can start from it unchanged.
const ProducerIDBlockFile = "producer-id-block"

// producerIDBlockVersion is the only version of ProducerIDBlockFile.
const producerIDBlockVersion = 0

// DefaultProducerIDBlockSize is how many ids one durable write reserves,
// the size of Kafka's producer id blocks.
const DefaultProducerIDBlockSize = 1000

// ErrProducerIDsFailed is returned by ProducerIDAllocator.Next after a
// failed write of the block file; the allocator stays failed until restart
// (a failed fsync is never retried).
var ErrProducerIDsFailed = errors.New("storage: producer id allocator offline after IO failure")

// ProducerIDAllocator hands out producer ids that never repeat, also
// across restarts: before it hands out an id from a new block it durably
// records the block's end, and on open it starts after the recorded end.
// Ids of a block not used before a restart are skipped, as in Kafka.
type ProducerIDAllocator struct {
	fs        vfs.FS
	file      string
	blockSize int64

	// mu is held across the block file write: allocation is rare (once per
	// block) and must not hand out an id before its block is durable.
	mu struct {
		sync.Mutex
		next     int64 // next id to hand out
		blockEnd int64 // first id not covered by the durable block
		failed   error
	}
}

// OpenProducerIDAllocator reads dir/ProducerIDBlockFile (missing: start at
// 0). blockSize <= 0 means DefaultProducerIDBlockSize.
func OpenProducerIDAllocator(fsys vfs.FS, dir string, blockSize int64) (*ProducerIDAllocator, error) {
	if blockSize <= 0 {
		blockSize = DefaultProducerIDBlockSize
	}
	a := &ProducerIDAllocator{fs: fsys, file: filepath.Join(dir, ProducerIDBlockFile), blockSize: blockSize}
	if fsys.Exists(a.file) {
		b, err := readFile(fsys, a.file)
		if err != nil {
			return nil, fmt.Errorf("storage: read %s: %w", a.file, err)
		}
		next, err := parseProducerIDBlock(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a.file, err)
		}
		a.mu.next, a.mu.blockEnd = next, next
	}
	return a, nil
}

// ReadProducerIDBlock returns the end recorded in dir/ProducerIDBlockFile
// and whether the file exists. Producer ids now come from blocks the
// controller allocates through the metadata log; the file of older
// versions is read once at start so that the controller's next id is
// raised past every id handed out before (then RemoveProducerIDBlock).
func ReadProducerIDBlock(fsys vfs.FS, dir string) (next int64, found bool, err error) {
	file := filepath.Join(dir, ProducerIDBlockFile)
	if !fsys.Exists(file) {
		return 0, false, nil
	}
	b, err := readFile(fsys, file)
	if err != nil {
		return 0, true, fmt.Errorf("storage: read %s: %w", file, err)
	}
	next, err = parseProducerIDBlock(b)
	if err != nil {
		return 0, true, fmt.Errorf("%s: %w", file, err)
	}
	return next, true, nil
}

// RemoveProducerIDBlock removes dir/ProducerIDBlockFile once its value is
// in the metadata log, and syncs dir.
func RemoveProducerIDBlock(fsys vfs.FS, dir string) error {
	if err := fsys.Remove(filepath.Join(dir, ProducerIDBlockFile)); err != nil {
		return fmt.Errorf("storage: remove producer id block: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("storage: remove producer id block: %w", err)
	}
	return nil
}

func parseProducerIDBlock(b []byte) (int64, error) {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) != 2 {
		return 0, fmt.Errorf("%w: producer id block has %d lines", ErrCorrupt, len(lines))
	}
	if v, err := strconv.Atoi(strings.TrimSpace(lines[0])); err != nil || v != producerIDBlockVersion {
		return 0, fmt.Errorf("%w: producer id block version %q", ErrCorrupt, lines[0])
	}
	next, err := strconv.ParseInt(strings.TrimSpace(lines[1]), 10, 64)
	if err != nil || next < 0 {
		return 0, fmt.Errorf("%w: producer id block end %q", ErrCorrupt, lines[1])
	}
	return next, nil
}

func encodeProducerIDBlock(next int64) []byte {
	return []byte(fmt.Sprintf("%d\n%d\n", producerIDBlockVersion, next))
}

// Next returns a fresh producer id.
func (a *ProducerIDAllocator) Next() (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.failed != nil {
		return -1, a.mu.failed
	}
	if a.mu.next >= a.mu.blockEnd {
		end := a.mu.next + a.blockSize
		if err := writeFileAtomic(a.fs, a.file, encodeProducerIDBlock(end)); err != nil {
			a.mu.failed = fmt.Errorf("%w: %w", ErrProducerIDsFailed, err)
			return -1, a.mu.failed
		}
		a.mu.blockEnd = end
	}
	id := a.mu.next
	a.mu.next++
	return id, nil
}
