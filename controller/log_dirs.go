package controller

import (
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Log directory failures with several log directories per broker (JBOD),
// as KIP-858 does them in Kafka 4.4: each replica has a log directory
// (by its directory.id; Partition.Directories, dir_placement.go), and a
// broker lists the directories that failed in every heartbeat
// (BrokerHeartbeat v1 offline_log_dirs). A replica whose directory is
// offline is an offline replica: the controller removes it from the ISR
// (an ISR never becomes empty, as when a broker is fenced), moves the
// leadership away from it, refuses it back into the ISR, and Metadata
// lists it in offline_replicas. The rest of the broker keeps its roles.
//
// A broker reports the directory of a replica whose directory the
// controller left to it (AssignReplicasToDirs, recorded as a
// ReplicaDirsRecord that sets the replica's directory), and, when a
// directory fails, the directory of each of its replicas again before the
// directory is listed offline. Offline (BrokerOfflineDirsRecord) and
// cordoned (BrokerCordonedDirsRecord) directories belong to one
// incarnation of the broker (its epoch) and are dropped when it registers
// again, as Kafka's registration lists every directory online again.

// Record types of this file (values are part of the on-disk format).
const (
	RecordReplicaDirs       RecordType = 20
	RecordBrokerOfflineDirs RecordType = 21
)

// TopicIDPartitions names partitions of one topic by topic id.
type TopicIDPartitions struct {
	TopicID    Uuid    `json:"topic_id"`
	Partitions []int32 `json:"partitions"`
}

// ReplicaDirsRecord records that broker BrokerID, in its incarnation of
// epoch Epoch, holds Replicas in its log directory Dir.
type ReplicaDirsRecord struct {
	BrokerID int32               `json:"broker_id"`
	Epoch    int64               `json:"epoch"`
	Dir      Uuid                `json:"dir"`
	Replicas []TopicIDPartitions `json:"replicas"`
}

// BrokerOfflineDirsRecord records that the log directories Dirs of broker
// BrokerID (incarnation of epoch Epoch) failed. Offline directories only
// accumulate within an incarnation.
type BrokerOfflineDirsRecord struct {
	BrokerID int32  `json:"broker_id"`
	Epoch    int64  `json:"epoch"`
	Dirs     []Uuid `json:"dirs"`
}

func (ReplicaDirsRecord) recordType() RecordType       { return RecordReplicaDirs }
func (BrokerOfflineDirsRecord) recordType() RecordType { return RecordBrokerOfflineDirs }

// BrokerLogDirs is what the image knows about one broker's log
// directories beyond its registration: its offline and its cordoned
// directories (sorted), valid while the broker's epoch is Epoch.
type BrokerLogDirs struct {
	Epoch    int64
	Offline  []Uuid
	Cordoned []Uuid
}

// logDirsOf returns broker id's entry when it belongs to its current
// registration.
func (img *Image) logDirsOf(id int32) (BrokerLogDirs, bool) {
	d, ok := img.LogDirs[id]
	if !ok {
		return BrokerLogDirs{}, false
	}
	if b, ok := img.Brokers[id]; !ok || b.Epoch != d.Epoch {
		return BrokerLogDirs{}, false
	}
	return d, true
}

// ReplicaOffline reports whether broker's replica of the partition lives
// in a log directory the broker reported offline.
func (img *Image) ReplicaOffline(broker int32, topicID Uuid, partition int32) bool {
	t := img.TopicsByID[topicID]
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return false
	}
	dir := t.Partitions[partition].DirectoryOf(broker)
	if dir == DirLost && slices.Contains(t.Partitions[partition].Replicas, broker) {
		return true
	}
	d, ok := img.logDirsOf(broker)
	return ok && slices.Contains(d.Offline, dir)
}

// OfflineReplicas returns the replicas of the partition that are offline
// in Metadata's sense: on a fenced or unknown broker, or in an offline
// log directory; never nil.
func (img *Image) OfflineReplicas(t *Topic, p Partition) []int32 {
	out := []int32{}
	for _, r := range p.Replicas {
		if b, ok := img.Brokers[r]; !ok || b.Fenced || img.ReplicaOffline(r, t.ID, p.Partition) {
			out = append(out, r)
		}
	}
	return out
}

// onlineReplicas returns p's replicas (of topic topicID) that are not in
// an offline log directory, in replica order.
func (img *Image) onlineReplicas(topicID Uuid, p Partition) []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return img.ReplicaOffline(r, topicID, p.Partition) })
}

// OfflineLogDirs returns the directory ids broker id reported offline in
// its current incarnation.
func (img *Image) OfflineLogDirs(id int32) []Uuid {
	d, _ := img.logDirsOf(id)
	return slices.Clone(d.Offline)
}

// applyLogDirs applies a BrokerOfflineDirsRecord or
// BrokerCordonedDirsRecord.
func (b *builder) applyLogDirs(rec Record) error {
	var id int32
	var epoch int64
	switch r := rec.(type) {
	case ReplicaDirsRecord:
		return b.applyReplicaDirs(r)
	case BrokerOfflineDirsRecord:
		id, epoch = r.BrokerID, r.Epoch
	case BrokerCordonedDirsRecord:
		id, epoch = r.BrokerID, r.Epoch
	}
	if _, ok := b.img.Brokers[id]; !ok {
		return fmt.Errorf("%w: log dirs of unknown broker %d", ErrApply, id)
	}
	d := b.img.LogDirs[id]
	if d.Epoch != epoch {
		d = BrokerLogDirs{Epoch: epoch}
	}
	switch r := rec.(type) {
	case BrokerOfflineDirsRecord:
		offline := slices.Clone(d.Offline)
		for _, dir := range r.Dirs {
			if !slices.Contains(offline, dir) {
				offline = append(offline, dir)
			}
		}
		d.Offline = offline
	case BrokerCordonedDirsRecord:
		cordoned := slices.Clone(r.Dirs)
		slices.SortFunc(cordoned, compareUuid)
		if cordoned = slices.Compact(cordoned); len(cordoned) == 0 {
			cordoned = nil
		}
		d.Cordoned = cordoned
	}
	b.img.LogDirs = cloneMap(b.img.LogDirs)
	b.img.LogDirs[id] = d
	return nil
}

// logDirRecords appends the records that rebuild img.LogDirs (snapshots),
// leaving out entries of older incarnations. Replica directories are in
// the partitions' records.
func logDirRecords(recs []Record, img *Image) []Record {
	for _, id := range slices.Sorted(maps.Keys(img.LogDirs)) {
		d, ok := img.logDirsOf(id)
		if !ok {
			continue
		}
		if len(d.Offline) > 0 {
			recs = append(recs, BrokerOfflineDirsRecord{BrokerID: id, Epoch: d.Epoch, Dirs: slices.Clone(d.Offline)})
		}
		if len(d.Cordoned) > 0 {
			recs = append(recs, BrokerCordonedDirsRecord{BrokerID: id, Epoch: d.Epoch, Dirs: slices.Clone(d.Cordoned)})
		}
	}
	return recs
}

func compareUuid(a, b Uuid) int { return slices.Compare(a[:], b[:]) }

// decideOfflineReplicas returns the partition changes that take broker's
// offline replicas (ReplicaOffline in img) out of service: each leaves
// the ISR unless it is its last member, and where it leads, the first
// other unfenced ISR member in replica order leads instead (none: -1,
// the partition is offline until the replica comes back, or, where the
// topic allows unclean election, its first other unfenced replica leads
// with an ISR of itself alone).
func decideOfflineReplicas(img *Image, broker int32, unclean UncleanPolicy) []Record {
	d, ok := img.logDirsOf(broker)
	if !ok || len(d.Offline) == 0 {
		return nil
	}
	var recs []Record
	forEachPartition(img, func(t *Topic, p Partition) {
		if !slices.Contains(p.Replicas, broker) || !img.ReplicaOffline(broker, t.ID, p.Partition) {
			return
		}
		change := PartitionChangeRecord{TopicID: t.ID, Partition: p.Partition}
		others := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == broker })
		if len(others) > 0 && len(others) < len(p.ISR) {
			change.ISR = others
		}
		if p.Leader == broker {
			leader := electLeader(img, p.Replicas, others)
			if leader == -1 && unclean.allowed(t) {
				rest := slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return r == broker })
				if leader = electLeader(img, rest, rest); leader != -1 {
					change.ISR = []int32{leader}
				}
			}
			change.Leader = ptrTo(leader)
		}
		if change.ISR == nil && change.Leader == nil {
			return
		}
		recs = append(recs, change)
	})
	return recs
}

// decideLogDirs checks broker's epoch, and returns rec (when it changes
// the image) followed by the partition changes of decideOfflineReplicas
// on the resulting image.
func decideLogDirs(img *Image, broker int32, epoch int64, rec Record, unclean UncleanPolicy) (int16, []Record) {
	if code := img.CheckBrokerEpoch(broker, epoch); code != 0 || epoch < 0 {
		if code == 0 {
			code = kerr.StaleBrokerEpoch.Code // the assignment needs the incarnation
		}
		return code, nil
	}
	var recs []Record
	after, err := Apply(img, rec)
	if err != nil {
		panic(fmt.Sprintf("controller: log dir decision: %v", err))
	}
	changed := !sameLogDirs(img, after, broker)
	if r, ok := rec.(ReplicaDirsRecord); ok {
		changed = changesReplicaDirs(img, r)
	}
	if changed {
		recs = append(recs, rec)
	} else {
		after = img
	}
	return 0, append(recs, decideOfflineReplicas(after, broker, unclean)...)
}

// sameLogDirs reports whether broker's log dir entry is the same in a and b.
func sameLogDirs(a, b *Image, broker int32) bool {
	x, xok := a.LogDirs[broker]
	y, yok := b.LogDirs[broker]
	return xok == yok && x.Epoch == y.Epoch && slices.Equal(x.Offline, y.Offline) && slices.Equal(x.Cordoned, y.Cordoned)
}

// AssignReplicasToDirs records that broker (of epoch) holds the given
// replicas in its log directory dir, and takes them out of service if dir
// is offline. It returns a Kafka error code (STALE_BROKER_EPOCH,
// BROKER_ID_NOT_REGISTERED, or that of a failed commit).
func (c *Controller) AssignReplicasToDirs(broker int32, epoch int64, dir Uuid, replicas []TopicIDPartitions) (int16, error) {
	var code int16
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		code, recs = decideLogDirs(img, broker, epoch, ReplicaDirsRecord{BrokerID: broker, Epoch: epoch, Dir: dir, Replicas: replicas}, c.opts.UncleanLeaderElection)
		return recs
	})
	if code != 0 {
		return code, nil
	}
	if err != nil {
		code, _ = errorCode(err)
	}
	return code, err
}

// ReportOfflineLogDirs records broker's offline log directories (a
// heartbeat's offline_log_dirs) and takes the replicas assigned to them
// out of service. An empty dirs does nothing.
func (c *Controller) ReportOfflineLogDirs(broker int32, epoch int64, dirs []Uuid) (int16, error) {
	if len(dirs) == 0 {
		return 0, nil
	}
	var code int16
	err := c.writeIfNeeded(func(img *Image) []Record {
		var recs []Record
		code, recs = decideLogDirs(img, broker, epoch, BrokerOfflineDirsRecord{BrokerID: broker, Epoch: epoch, Dirs: dirs}, c.opts.UncleanLeaderElection)
		return recs
	})
	if code != 0 {
		return code, nil
	}
	if err != nil {
		code, _ = errorCode(err)
	}
	return code, err
}

// ineligibleOffline is the answer to an ISR change that adds a replica in
// an offline log directory.
func ineligibleOffline(r int32) (int16, string) {
	return kerr.IneligibleReplica.Code, fmt.Sprintf("Broker %d's replica is in an offline log directory and cannot join the ISR.", r)
}
