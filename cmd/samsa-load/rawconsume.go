package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The raw consume mode (-consume raw) of -procs: each consumer process
// reads its partitions with plain Fetch requests (franz-go's connection
// and version negotiation, kmsg's encoding; no fetch session, no
// franz-go record decoding), one request in flight per leader as
// franz-go's consumer has, and checks and counts what comes back itself:
// every batch's CRC-32C, magic and length, every record's length, offset
// delta and value (walked, not copied), the batch's record count against
// the records walked, and the offsets continuing where the last fetch
// ended. It allocates nothing per record. It takes uncompressed batches
// only (the load tool produces them by default).
//
// It exists because franz-go's consumer costs about 0.8-0.9 CPU s per GB
// of 1 KiB records (a *kgo.Record per record, the batch copied into a
// fresh buffer per response, then walked): on two cores shared with the
// broker, the clients set the consume figure. The raw mode is used the
// same way for every broker, so what it measures is the broker's serving
// of fetches with a client that does far less per byte.

var (
	errRawCompressed = errors.New("samsa-load: -consume raw reads uncompressed batches only")
	errRawCorrupt    = errors.New("samsa-load: corrupt record batch")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// rawPartition is one partition a raw consumer reads.
type rawPartition struct {
	topic   string
	topicID [16]byte
	id      int32
	next    int64 // the next offset to read
	end     int64 // read until next reaches end
}

// batchCount is what walkBatches found in a partition's record set.
type batchCount struct {
	records, valueBytes int64
	batches, batchBytes int64 // whole batches walked (those before the fetch offset too), header included
	next                int64 // the offset after the last whole batch (from unchanged when none)
}

// walkBatches checks and counts the records at offsets >= from in the
// whole batches of b (a trailing partial batch, which Kafka sends when a
// range ends inside one, is left for the next fetch).
func walkBatches(b []byte, from int64) (batchCount, error) {
	c := batchCount{next: from}
	for len(b) >= 61 { // a batch header
		base := int64(binary.BigEndian.Uint64(b))
		length := int(int32(binary.BigEndian.Uint32(b[8:])))
		if length < 49 {
			return c, fmt.Errorf("%w: batch length %d at offset %d", errRawCorrupt, length, base)
		}
		if 12+length > len(b) {
			break // partial
		}
		batch := b[:12+length]
		b = b[12+length:]
		c.batches++
		c.batchBytes += int64(len(batch))
		if magic := batch[16]; magic != 2 {
			return c, fmt.Errorf("%w: magic %d at offset %d", errRawCorrupt, magic, base)
		}
		if want, got := binary.BigEndian.Uint32(batch[17:]), crc32.Checksum(batch[21:], castagnoli); want != got {
			return c, fmt.Errorf("%w: CRC %08x, computed %08x, at offset %d", errRawCorrupt, want, got, base)
		}
		attrs := binary.BigEndian.Uint16(batch[21:])
		lastDelta := int64(int32(binary.BigEndian.Uint32(batch[23:])))
		count := int(int32(binary.BigEndian.Uint32(batch[57:])))
		if base+lastDelta < c.next {
			continue // wholly before the fetch offset
		}
		c.next = base + lastDelta + 1
		if attrs&0x20 != 0 {
			continue // a control batch: no data records
		}
		if attrs&0x07 != 0 {
			return c, errRawCompressed
		}
		recs, values, err := walkRecords(batch[61:], count, base, from)
		if err != nil {
			return c, fmt.Errorf("batch at offset %d: %w", base, err)
		}
		c.records += recs
		c.valueBytes += values
	}
	return c, nil
}

// walkRecords walks the count records of an uncompressed batch body
// and counts those at offsets >= from and their value bytes.
func walkRecords(body []byte, count int, base, from int64) (recs, values int64, err error) {
	for i := range count {
		length, n := binary.Varint(body)
		if n <= 0 || length < 0 || int64(len(body)-n) < length {
			return recs, values, fmt.Errorf("%w: record %d of %d: length", errRawCorrupt, i, count)
		}
		rec := body[n : n+int(length)]
		body = body[n+int(length):]
		if len(rec) < 1 {
			return recs, values, fmt.Errorf("%w: record %d of %d: empty", errRawCorrupt, i, count)
		}
		p := rec[1:]        // attributes
		var fields [2]int64 // timestamp delta, offset delta
		for f := range fields {
			v, n := binary.Varint(p)
			if n <= 0 {
				return recs, values, fmt.Errorf("%w: record %d of %d: deltas", errRawCorrupt, i, count)
			}
			fields[f], p = v, p[n:]
		}
		keyLen, n := binary.Varint(p)
		if n <= 0 || keyLen < -1 || int64(len(p)-n) < max(keyLen, 0) {
			return recs, values, fmt.Errorf("%w: record %d of %d: key", errRawCorrupt, i, count)
		}
		p = p[n+int(max(keyLen, 0)):]
		valueLen, n := binary.Varint(p)
		if n <= 0 || valueLen < -1 || int64(len(p)-n) < max(valueLen, 0) {
			return recs, values, fmt.Errorf("%w: record %d of %d: value", errRawCorrupt, i, count)
		}
		if base+fields[1] >= from {
			recs++
			values += max(valueLen, 0)
		}
	}
	if len(body) != 0 {
		return recs, values, fmt.Errorf("%w: %d bytes after the batch's %d records", errRawCorrupt, len(body), count)
	}
	return recs, values, nil
}

// rawConsumeChild reads topic's partitions up to their targets with
// plain Fetch requests, one loop per partition leader.
func rawConsumeChild(ctx context.Context, cl *kgo.Client, topic string, targets map[int32]int64) (childResult, error) {
	res := childResult{Start: time.Now().UnixNano()}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return res, fmt.Errorf("metadata: %w", err)
	}
	if len(mresp.Topics) != 1 {
		return res, fmt.Errorf("metadata: %d topics for %s", len(mresp.Topics), topic)
	}
	t := mresp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return res, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	byLeader := map[int32][]*rawPartition{}
	for _, p := range t.Partitions {
		end, ok := targets[p.Partition]
		if !ok {
			continue
		}
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return res, fmt.Errorf("metadata of %s/%d: %w", topic, p.Partition, err)
		}
		byLeader[p.Leader] = append(byLeader[p.Leader], &rawPartition{topic: topic, topicID: t.TopicID, id: p.Partition, end: end})
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	for leader, ps := range byLeader {
		wg.Go(func() {
			c, err := rawFetchLoop(ctx, cl.Broker(int(leader)), ps)
			mu.Lock()
			defer mu.Unlock()
			res.Records += c.records
			res.Bytes += c.valueBytes
			res.Batches += c.batches
			res.BatchBytes += c.batchBytes
			if err != nil {
				errs = append(errs, fmt.Errorf("leader %d: %w", leader, err))
			}
		})
	}
	wg.Wait()
	res.End = time.Now().UnixNano()
	return res, errors.Join(errs...)
}

// rawFetchLoop fetches ps from one broker until each reached its end and
// returns what it walked (next unused).
func rawFetchLoop(ctx context.Context, b *kgo.Broker, ps []*rawPartition) (total batchCount, err error) {
	byID := map[int32]*rawPartition{}
	for _, p := range ps {
		byID[p.id] = p
	}
	req := kmsg.NewPtrFetchRequest()
	for {
		req.Topics = req.Topics[:0]
		ft := kmsg.NewFetchRequestTopic()
		for _, p := range ps {
			if p.next >= p.end {
				continue
			}
			ft.Topic, ft.TopicID = p.topic, p.topicID
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p.id, p.next, 10<<20
			ft.Partitions = append(ft.Partitions, fp)
		}
		if len(ft.Partitions) == 0 {
			return total, nil
		}
		req.Topics = append(req.Topics, ft)
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 500, 1, 50<<20
		req.SessionID, req.SessionEpoch = 0, -1 // no fetch session
		kresp, err := b.Request(ctx, req)
		if err != nil {
			return total, err
		}
		resp := kresp.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return total, fmt.Errorf("fetch: %w", err)
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				p := byID[rp.Partition]
				if p == nil {
					return total, fmt.Errorf("fetch: partition %d not asked for", rp.Partition)
				}
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return total, fmt.Errorf("fetch partition %d: %w", rp.Partition, err)
				}
				c, err := walkBatches(rp.RecordBatches, p.next)
				if err != nil {
					return total, fmt.Errorf("partition %d: %w", rp.Partition, err)
				}
				total.records, total.valueBytes, p.next = total.records+c.records, total.valueBytes+c.valueBytes, c.next
				total.batches, total.batchBytes = total.batches+c.batches, total.batchBytes+c.batchBytes
			}
		}
	}
}
