package diff

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// batch encodes a record batch of n records with fixed keys, values and
// timestamps; pid -1 is a plain producer.
func (s *Session) batch(n int, pid int64, epoch int16, seq int32, txn bool) []byte {
	spec := wire.BatchSpec{BaseTimestamp: s.BaseTS, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: txn}
	if pid < 0 {
		spec.ProducerEpoch, spec.BaseSequence = -1, -1
	}
	for i := 0; i < n; i++ {
		spec.Records = append(spec.Records, wire.Record{
			TimestampDelta: int64(i),
			Key:            []byte{'k', byte('0' + i%10)},
			Value:          []byte("value of the differential suite"),
		})
	}
	b, err := wire.EncodeBatch(spec)
	if err != nil {
		panic("diff: EncodeBatch of a fixed spec: " + err.Error()) // invariant: the spec is valid
	}
	return b
}

// recompressed is s.batch(n, ...) compressed with codec c, declaring count
// records; with payload set, the compressed payload is replaced by it (the
// CRC is recomputed either way).
func (s *Session) recompressed(c wire.Compression, n int, payload []byte, count int32) []byte {
	raw := s.batch(n, -1, -1, -1, false)
	body := payload
	if body == nil {
		var err error
		if body, err = wire.Compress(c, raw[wire.BatchHeaderSize:]); err != nil {
			panic("diff: Compress: " + err.Error()) // invariant: the codecs compress anything
		}
	}
	b := append(append([]byte(nil), raw[:wire.BatchHeaderSize]...), body...)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))                  // batch length
	binary.BigEndian.PutUint16(b[21:], uint16(c))                         // attributes: the codec
	binary.BigEndian.PutUint32(b[23:], uint32(count-1))                   // last offset delta
	binary.BigEndian.PutUint32(b[wire.BatchHeaderSize-4:], uint32(count)) // record count
	wire.RecomputeCRC(b)
	return b
}

// oddBatch is three records with codec c, base offset baseOffset and the
// given offset deltas: the first with attributes 0x7f and a header, the
// last without a key; timestamps s.BaseTS+2, +5, -20 from a header base
// timestamp of s.BaseTS and a header max timestamp of s.BaseTS+100 (not
// the records': Kafka writes theirs).
func (s *Session) oddBatch(c wire.Compression, baseOffset int64, deltas []int32) []byte {
	recs := []wire.Record{
		{Attributes: 0x7f, TimestampDelta: 2, Key: []byte("k0"), Value: []byte("odd 0"), Headers: []wire.RecordHeader{{Key: "h", Value: []byte("x")}}},
		{TimestampDelta: 5, Key: []byte("k1"), Value: []byte("odd 1")},
		{TimestampDelta: -20, Value: []byte("odd 2")},
	}
	var body []byte
	for i := range recs {
		recs[i].OffsetDelta = deltas[i]
		one, err := wire.EncodeBatch(wire.BatchSpec{Records: recs[i : i+1]})
		if err != nil {
			panic("diff: EncodeBatch of a fixed spec: " + err.Error()) // invariant: the spec is valid
		}
		body = append(body, one[wire.BatchHeaderSize:]...)
	}
	payload, err := wire.Compress(c, body)
	if err != nil {
		panic("diff: Compress: " + err.Error()) // invariant: the codecs compress anything
	}
	b := s.batch(3, -1, -1, -1, false)[:wire.BatchHeaderSize]
	b = append(b, payload...)
	binary.BigEndian.PutUint64(b[0:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))     // batch length
	binary.BigEndian.PutUint16(b[21:], uint16(c))            // attributes: the codec
	binary.BigEndian.PutUint64(b[35:], uint64(s.BaseTS+100)) // max timestamp
	wire.RecomputeCRC(b)
	return b
}

// zeroBatch is one record of size zero bytes compressed with codec c.
func (s *Session) zeroBatch(c wire.Compression, size int) []byte {
	b, err := wire.EncodeBatch(wire.BatchSpec{BaseTimestamp: s.BaseTS, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Compression: c, Records: []wire.Record{{Key: []byte("zero"), Value: make([]byte, size)}}})
	if err != nil {
		panic("diff: EncodeBatch of a fixed spec: " + err.Error()) // invariant: the spec is valid
	}
	return b
}

// bigBatch is one record of size bytes (over message.max.bytes when size
// is above 1048588).
func (s *Session) bigBatch(size int) []byte {
	spec := wire.BatchSpec{BaseTimestamp: s.BaseTS, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []wire.Record{{Value: make([]byte, size)}}}
	b, err := wire.EncodeBatch(spec)
	if err != nil {
		panic("diff: EncodeBatch of a fixed spec: " + err.Error())
	}
	return b
}

// produceReq builds a Produce of records to topic/partition; v13+ names
// the topic by id.
func (s *Session) produceReq(v int16, acks int16, txnID *string, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis, req.TransactionID = acks, 30000, txnID
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	if v >= 13 {
		t.TopicID = s.TopicID(topic)
	}
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = partition, records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// fetchReq builds a Fetch of one partition from offset; v13+ by topic id.
func (s *Session) fetchReq(v int16, topic string, partition int32, offset int64, leaderEpoch int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	req.SessionID, req.SessionEpoch = 0, -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	if v >= 13 {
		t.TopicID = s.TopicID(topic)
	}
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch, p.LogStartOffset = partition, offset, 1<<20, leaderEpoch, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// listOffsetsReq asks for one partition's offset at timestamp ts.
func listOffsetsReq(topic string, partition int32, ts int64, leaderEpoch int32) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp, p.CurrentLeaderEpoch, p.MaxNumOffsets = partition, ts, leaderEpoch, 1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// metadataReq asks for topics; nil means every topic (an empty list at v0).
func metadataReq(v int16, autoCreate bool, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = autoCreate
	if topics == nil && v >= 1 {
		req.Topics = nil
		return req
	}
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// createTopic is one topic of a CreateTopics request.
func createTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		t.Configs = append(t.Configs, c)
	}
	return t
}

func createTopicsReq(validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis, req.ValidateOnly, req.Topics = 30000, validateOnly, topics
	return req
}
