package controller

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Snapshot format (version 1); see doc.go for the migration rules.
//
//	magic    [8]byte  "SAMSAMSS"
//	version  uint16   1
//	offset   int64    Image.Offset (-1: empty image)
//	count    uint32   number of frames that follow
//	frames            count frames as in the FileLog, the records that
//	                  rebuild the image from the empty one (ImageRecords)
//
// A frame past count is corruption. The cluster id and node id are not
// stored: they come from the node that reads the snapshot.
const (
	snapshotMagic      = "SAMSAMSS"
	snapshotVersion    = uint16(1)
	snapshotHeaderSize = len(snapshotMagic) + 2 + 8 + 4
)

// ImageRecords returns records that, applied in order to an empty image,
// rebuild img (except Offset): brokers by id, cluster and broker configs,
// then topics by name with their partitions (current leader, epochs, ISR)
// and configs. Every field of Image must be covered here, or snapshots
// lose it (TestSnapshotCoversImage checks the list of fields).
func ImageRecords(img *Image) []Record {
	var recs []Record
	for _, id := range slices.Sorted(maps.Keys(img.Brokers)) {
		b := img.Brokers[id]
		recs = append(recs, RegisterBrokerRecord{BrokerID: b.ID, Host: b.Host, Port: b.Port, Listeners: b.Listeners, Rack: b.Rack, Fenced: b.Fenced,
			Epoch: b.Epoch, Incarnation: b.Incarnation, LogDirs: slices.Clone(b.LogDirs)})
	}
	for _, res := range slices.Sorted(maps.Keys(img.BrokerConfigs)) {
		recs = appendConfigRecords(recs, ConfigResourceBroker, res, img.BrokerConfigs[res])
	}
	for _, g := range slices.Sorted(maps.Keys(img.GroupConfigs)) {
		recs = appendConfigRecords(recs, ConfigResourceGroup, g, img.GroupConfigs[g])
	}
	for _, name := range slices.Sorted(maps.Keys(img.ClientMetrics)) {
		recs = appendConfigRecords(recs, ConfigResourceClientMetrics, name, img.ClientMetrics[name])
	}
	for _, name := range slices.Sorted(maps.Keys(img.Topics)) {
		t := img.Topics[name]
		recs = append(recs, TopicRecord{Name: t.Name, ID: t.ID})
		for _, p := range t.Partitions {
			recs = append(recs, PartitionRecord{
				TopicID: t.ID, Partition: p.Partition, Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR),
				Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				AddingReplicas: slices.Clone(p.AddingReplicas), RemovingReplicas: slices.Clone(p.RemovingReplicas),
				ELR: slices.Clone(p.ELR), LastKnownELR: slices.Clone(p.LastKnownELR),
				Directories: slices.Clone(p.Directories), LeaderRecoveryState: p.LeaderRecoveryState,
			})
		}
		recs = appendConfigRecords(recs, ConfigResourceTopic, name, t.Configs)
	}
	recs = scramRecords(recs, img)
	recs = delegationTokenRecords(recs, img)
	recs = aclRecords(recs, img)
	recs = clientQuotaRecords(recs, img)
	recs = logDirRecords(recs, img)
	recs = featureLevelRecords(recs, img)
	if img.NextProducerID > 0 {
		recs = append(recs, ProducerIDsRecord{BrokerID: -1, NextProducerID: img.NextProducerID})
	}
	return recs
}

func appendConfigRecords(recs []Record, typ int8, resource string, m map[string]string) []Record {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		recs = append(recs, ConfigRecord{ResourceType: typ, ResourceName: resource, Name: k, Value: &v})
	}
	return recs
}

// WriteSnapshot writes img in the snapshot format.
func WriteSnapshot(w io.Writer, img *Image) error {
	recs := ImageRecords(img)
	bw := bufio.NewWriter(w)
	hdr := make([]byte, 0, snapshotHeaderSize)
	hdr = append(hdr, snapshotMagic...)
	hdr = binary.BigEndian.AppendUint16(hdr, snapshotVersion)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(img.Offset))
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(recs)))
	if _, err := bw.Write(hdr); err != nil {
		return err
	}
	var buf []byte
	for _, rec := range recs {
		var err error
		if buf, err = appendFrame(buf[:0], rec); err != nil {
			return err
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadSnapshot reads a snapshot written by WriteSnapshot and returns the
// image it describes, built on empty (which gives the cluster and node id).
func ReadSnapshot(r io.Reader, empty *Image) (*Image, error) {
	br := bufio.NewReader(r)
	hdr := make([]byte, snapshotHeaderSize)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf("%w: snapshot header: %w", ErrCorrupt, err)
	}
	if string(hdr[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: snapshot: bad magic", ErrCorrupt)
	}
	if v := binary.BigEndian.Uint16(hdr[len(snapshotMagic):]); v != snapshotVersion {
		return nil, fmt.Errorf("%w: snapshot version %d", ErrUnsupportedVersion, v)
	}
	offset := int64(binary.BigEndian.Uint64(hdr[len(snapshotMagic)+2:]))
	count := int64(binary.BigEndian.Uint32(hdr[len(snapshotMagic)+10:]))
	b := newBuilder(empty)
	_, n, err := scanFrames(br, func(i int64, rec Record) error {
		if i >= count {
			return fmt.Errorf("%w: snapshot has more than %d records", ErrCorrupt, count)
		}
		if err := b.apply(rec); err != nil {
			return fmt.Errorf("%w: snapshot record %d: %w", ErrCorrupt, i, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n != count {
		return nil, fmt.Errorf("%w: snapshot has %d of %d records", ErrCorrupt, n, count)
	}
	b.img.Offset = offset
	return b.img, nil
}
