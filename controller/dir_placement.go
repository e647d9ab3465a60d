package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Directory placement (KIP-858, KIP-1066), as Kafka 4.4 does it. A broker
// registers the directory.id of each of its online log directories
// (Broker.LogDirs, BrokerRegistration v2+ log_dirs), and each replica of a
// partition has a directory (Partition.Directories, in replica order):
//
//   - At placement (a new partition, or a replica added by a
//     reassignment) a replica on a broker with one log directory gets
//     that directory; on a broker with several it gets DirUnassigned and
//     the broker picks one (the one with the fewest partitions, never a
//     cordoned one) and reports it with AssignReplicasToDirs, which
//     records it (ReplicaDirsRecord); on a broker that registered no
//     directory (older builds) it gets DirMigrating. A replica that
//     stays keeps its directory across reassignments.
//   - A broker lists its cordoned directories (cordoned.log.dirs,
//     KIP-1066; BrokerHeartbeat v2 cordoned_log_dirs) for its current
//     incarnation (BrokerCordonedDirsRecord). A broker whose every log
//     directory is cordoned gets no new replica from placement, as if it
//     were not registered (the replication factor check counts it out).
//   - A replica is offline when its directory is DirLost or one its broker
//     reported offline (log_dirs.go).
//
// Kafka writes the directories in PartitionRecord v1+ and
// PartitionChangeRecord v2+ (directories), RegisterBrokerRecord v3+
// (log_dirs) and v4+ (cordoned_log_dirs), BrokerRegistrationChangeRecord
// v3+ (cordoned_log_dirs). samsa's PartitionRecord carries directories
// (omitted while every one is DirMigrating); a PartitionChangeRecord that
// sets the replicas realigns them when applied (kept for a replica that
// stays, the broker's default directory for a new one), so the record
// needs no field for it.

// Reserved directory ids (Kafka's DirectoryId): MIGRATING is the zero
// UUID, UNASSIGNED (0, 1) and LOST (0, 2).
var (
	// DirMigrating is the directory of a replica on a broker that
	// registered no log directory (a build before directory ids).
	DirMigrating = Uuid{}
	// DirUnassigned is the directory of a replica whose broker has not
	// yet reported which of its several log directories holds it.
	DirUnassigned = Uuid{15: 1}
	// DirLost is the directory of a replica whose directory is gone.
	DirLost = Uuid{15: 2}
)

// RecordBrokerCordonedDirs is the record type of BrokerCordonedDirsRecord
// (value part of the on-disk format).
const RecordBrokerCordonedDirs RecordType = 22

// BrokerCordonedDirsRecord sets the cordoned log directories of broker
// BrokerID in its incarnation of epoch Epoch (replacing the previous
// list; empty: none), like Kafka's BrokerRegistrationChangeRecord
// cordoned_log_dirs.
type BrokerCordonedDirsRecord struct {
	BrokerID int32  `json:"broker_id"`
	Epoch    int64  `json:"epoch"`
	Dirs     []Uuid `json:"dirs,omitempty"`
}

func (BrokerCordonedDirsRecord) recordType() RecordType { return RecordBrokerCordonedDirs }

// DirectoryOf returns the log directory of broker's replica of p:
// DirMigrating when the partition records none, DirLost when broker is
// not a replica.
func (p Partition) DirectoryOf(broker int32) Uuid {
	i := slices.Index(p.Replicas, broker)
	switch {
	case i < 0:
		return DirLost
	case i >= len(p.Directories):
		return DirMigrating
	}
	return p.Directories[i]
}

// DefaultDir returns the directory a new replica on broker gets at
// placement (Kafka's ClusterControlManager.defaultDir): its only log
// directory, DirUnassigned when it has several or is not registered, and
// DirMigrating when it registered none.
func (img *Image) DefaultDir(broker int32) Uuid {
	b, ok := img.Brokers[broker]
	switch {
	case !ok:
		return DirUnassigned
	case len(b.LogDirs) == 0:
		return DirMigrating
	case len(b.LogDirs) == 1:
		return b.LogDirs[0]
	}
	return DirUnassigned
}

// defaultDirs returns the directories of new replicas, nil when every one
// is DirMigrating (the form records and images keep then).
func (img *Image) defaultDirs(replicas []int32) []Uuid {
	dirs := make([]Uuid, len(replicas))
	for i, r := range replicas {
		dirs[i] = img.DefaultDir(r)
	}
	return compactDirs(dirs)
}

// compactDirs returns nil for a list of DirMigrating only, else dirs.
func compactDirs(dirs []Uuid) []Uuid {
	for _, d := range dirs {
		if d != DirMigrating {
			return dirs
		}
	}
	return nil
}

// realignDirs returns the directories of p once its replicas are
// replicas: a replica that stays keeps its directory, a new one gets its
// broker's default.
func (img *Image) realignDirs(p Partition, replicas []int32) []Uuid {
	dirs := make([]Uuid, len(replicas))
	for i, r := range replicas {
		if slices.Contains(p.Replicas, r) {
			dirs[i] = p.DirectoryOf(r)
		} else {
			dirs[i] = img.DefaultDir(r)
		}
	}
	return compactDirs(dirs)
}

// CordonedLogDirs returns the log directories broker id cordoned in its
// current incarnation.
func (img *Image) CordonedLogDirs(id int32) []Uuid {
	d, _ := img.logDirsOf(id)
	return slices.Clone(d.Cordoned)
}

// hasUncordonedDir reports whether broker id may get new replicas: it
// registered no directory (nothing to cordon), or one of its registered
// directories is not cordoned (Kafka's hasUncordonedDirs).
func (img *Image) hasUncordonedDir(id int32) bool {
	b, ok := img.Brokers[id]
	if !ok || len(b.LogDirs) == 0 {
		return true
	}
	d, _ := img.logDirsOf(id)
	for _, dir := range b.LogDirs {
		if !slices.Contains(d.Cordoned, dir) {
			return true
		}
	}
	return false
}

// applyReplicaDirs sets the directory of broker r.BrokerID's replica of
// each partition of r, leaving out partitions of topics that are gone
// and partitions the broker no longer replicates (a reassignment may
// have moved them while the report was on its way).
func (b *builder) applyReplicaDirs(r ReplicaDirsRecord) error {
	if _, ok := b.img.Brokers[r.BrokerID]; !ok {
		return fmt.Errorf("%w: log dirs of unknown broker %d", ErrApply, r.BrokerID)
	}
	for _, tp := range r.Replicas {
		t, ok := b.img.TopicsByID[tp.TopicID]
		if !ok {
			continue
		}
		for _, part := range tp.Partitions {
			if part < 0 || int(part) >= len(t.Partitions) {
				continue
			}
			p := t.Partitions[part]
			i := slices.Index(p.Replicas, r.BrokerID)
			if i < 0 || p.DirectoryOf(r.BrokerID) == r.Dir {
				continue
			}
			dirs := make([]Uuid, len(p.Replicas))
			copy(dirs, p.Directories)
			dirs[i] = r.Dir
			t = b.ownTopic(t)
			p.Directories = compactDirs(dirs)
			t.Partitions[part] = p
		}
	}
	return nil
}

// changesReplicaDirs reports whether applying r to img moves a replica to
// another directory.
func changesReplicaDirs(img *Image, r ReplicaDirsRecord) bool {
	for _, tp := range r.Replicas {
		t, ok := img.TopicsByID[tp.TopicID]
		if !ok {
			continue
		}
		for _, part := range tp.Partitions {
			if part >= 0 && int(part) < len(t.Partitions) {
				p := t.Partitions[part]
				if slices.Contains(p.Replicas, r.BrokerID) && p.DirectoryOf(r.BrokerID) != r.Dir {
					return true
				}
			}
		}
	}
	return false
}

// ReportCordonedLogDirs records broker's cordoned log directories (in its
// incarnation of epoch), replacing the ones it reported before. It
// returns a Kafka error code (STALE_BROKER_EPOCH, BROKER_ID_NOT_REGISTERED,
// or that of a failed commit); a list equal to the recorded one writes
// nothing.
func (c *Controller) ReportCordonedLogDirs(broker int32, epoch int64, dirs []Uuid) (int16, error) {
	var code int16
	err := c.writeIfNeeded(func(img *Image) []Record {
		if code = img.CheckBrokerEpoch(broker, epoch); code != 0 || epoch < 0 {
			if code == 0 {
				code = kerr.StaleBrokerEpoch.Code
			}
			return nil
		}
		want := slices.Clone(dirs)
		slices.SortFunc(want, compareUuid)
		want = slices.Compact(want)
		if d, ok := img.logDirsOf(broker); ok && slices.Equal(d.Cordoned, want) || !ok && len(want) == 0 {
			return nil
		}
		return []Record{BrokerCordonedDirsRecord{BrokerID: broker, Epoch: epoch, Dirs: want}}
	})
	if code != 0 {
		return code, nil
	}
	if err != nil {
		code, _ = errorCode(err)
	}
	return code, err
}

// partitionDirs returns r's directories for the image: nil when they do
// not match its replicas (a record of a build that wrote none) or are all
// DirMigrating.
func partitionDirs(r PartitionRecord) []Uuid {
	if len(r.Directories) != len(r.Replicas) {
		return nil
	}
	return compactDirs(slices.Clone(r.Directories))
}

// sortedDirs returns dirs sorted without duplicates (nil for none), the
// form registrations keep (Kafka's BrokerRegistration sorts them too).
func sortedDirs(dirs []Uuid) []Uuid {
	if len(dirs) == 0 {
		return nil
	}
	out := slices.Clone(dirs)
	slices.SortFunc(out, compareUuid)
	return slices.Compact(out)
}
