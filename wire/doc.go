// Package wire decodes and encodes the Kafka wire protocol for samsa. It does
// no IO: every function takes and returns []byte.
//
// Requests and responses go through kmsg. A connection handler reads the
// int32 size prefix itself, then:
//
//	hdr, req, err := wire.ParseRequest(frame)
//	switch {
//	case errors.Is(err, wire.ErrUnsupportedVersion) && hdr.APIKey == 18:
//		// answer ApiVersions in its v0 shape with UNSUPPORTED_VERSION
//	case err != nil:
//		// close the connection
//	}
//	resp := handle(req) // a kmsg.Response of req.ResponseKind()
//	out = wire.AppendResponse(out[:0], hdr, resp)
//
// Record batches are Kafka's record batch v2 (magic 2). Their layout, with
// byte offsets:
//
//	 0 BaseOffset           int64
//	 8 BatchLength          int32   bytes after this field
//	12 PartitionLeaderEpoch int32
//	16 Magic                int8    = 2
//	17 CRC                  uint32  CRC-32C of bytes 21..end
//	21 Attributes           int16   bits 0-2 codec, 3 log append time, 4 transactional, 5 control
//	23 LastOffsetDelta      int32
//	27 BaseTimestamp        int64
//	35 MaxTimestamp         int64
//	43 ProducerID           int64
//	51 ProducerEpoch        int16
//	53 BaseSequence         int32
//	57 NumRecords           int32
//	61 records              NumRecords records, compressed as a whole by the codec
//
// Each record is: varint length, int8 attributes, varlong timestamp delta,
// varint offset delta, varint key length (-1 null) and key, varint value
// length and value, varint header count, then per header a varint key length
// and key and a varint value length (-1 null) and value. Varints are zigzag.
//
// On produce, ValidateProduce checks a partition's records as Kafka does and
// gives the Kafka error code to answer with (a *BatchError); storage then
// assigns offsets in place with SetBaseOffset, SetPartitionLeaderEpoch and,
// for log-append-time topics, SetLogAppendTime. Base offset and leader epoch
// are outside the CRC, so only SetLogAppendTime recomputes it.
//
//	hdrs, err := wire.ValidateProduce(p.Records, wire.ValidateOptions{
//		MaxBatchBytes: maxMessageBytes, ProduceVersion: req.Version,
//	})
//	var be *wire.BatchError
//	if errors.As(err, &be) {
//		p.ErrorCode = be.Code
//	}
//	wire.SetBaseOffset(p.Records, nextOffset)
//	nextOffset += int64(hdrs[0].LastOffsetDelta) + 1
//
// SplitBatches walks stored batches (for recovery or fetch), DecodeRecords
// and EncodeBatch read and build whole batches, StreamRecords reads a
// batch's records streaming (the coordinators' loads: keys and values cut
// at a limit, never the decompressed size held), and Recompress changes a
// batch's codec. Decompress accepts snappy both raw and xerial-framed, and
// caps its output at MaxDecompressedSize.
package wire
