package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// cleanShutdownFile is the marker a node writes into each log dir after a
// clean shutdown closed every log (Kafka's .kafka_cleanshutdown), holding
// the broker epoch of the incarnation that wrote it. The next start reads
// and removes it, and registers with that epoch as its previous epoch
// (BrokerRegistration previous_broker_epoch): the controller keeps a
// broker that stopped cleanly among the eligible leader replicas (KIP-966)
// and removes one that crashed, whose unflushed records may be gone.
//
// Format (version 1): JSON {"version":1,"broker_epoch":N}. A newer version
// or a damaged file reads as "no clean shutdown", the safe answer.
const cleanShutdownFile = ".samsa_cleanshutdown"

// errCleanShutdown wraps failures to write the marker.
var errCleanShutdown = errors.New("broker: clean shutdown marker")

type cleanShutdownMarker struct {
	Version     int   `json:"version"`
	BrokerEpoch int64 `json:"broker_epoch"`
}

// takeCleanShutdown returns the broker epoch of the clean shutdown
// recorded in every one of dirs, or -1 when any dir lacks the marker (a
// crash, or a first start) or they disagree, and removes the markers, so
// that a crash of this incarnation is not taken for a clean stop. It runs
// before any log is opened.
func takeCleanShutdown(dirs []string) (int64, error) {
	epoch := int64(-2)
	for _, dir := range dirs {
		path := filepath.Join(dir, cleanShutdownFile)
		b, err := os.ReadFile(path)
		var m cleanShutdownMarker
		switch {
		case errors.Is(err, fs.ErrNotExist):
			epoch = -1
			continue
		case err != nil:
			return -1, fmt.Errorf("%w: %w", errCleanShutdown, err)
		case json.Unmarshal(b, &m) != nil || m.Version != 1 || m.BrokerEpoch < 0:
			epoch = -1
		case epoch == -2:
			epoch = m.BrokerEpoch
		case epoch != m.BrokerEpoch:
			epoch = -1
		}
		if err := os.Remove(path); err != nil {
			return -1, fmt.Errorf("%w: %w", errCleanShutdown, err)
		}
		if err := syncDir(dir); err != nil {
			return -1, err
		}
	}
	if epoch < 0 {
		return -1, nil
	}
	return epoch, nil
}

// writeCleanShutdown records a clean shutdown of broker epoch epoch in
// every one of dirs. The logs must be closed (flushed) first.
func writeCleanShutdown(dirs []string, epoch int64) error {
	b, err := json.Marshal(cleanShutdownMarker{Version: 1, BrokerEpoch: epoch})
	if err != nil {
		return fmt.Errorf("%w: %w", errCleanShutdown, err)
	}
	for _, dir := range dirs {
		path := filepath.Join(dir, cleanShutdownFile)
		f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("%w: %w", errCleanShutdown, err)
		}
		_, err = f.Write(b)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%w: %w", errCleanShutdown, err)
		}
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%w: %w", errCleanShutdown, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errCleanShutdown, err)
	}
	return nil
}
