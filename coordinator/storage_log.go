package coordinator

import "github.com/samsa-broker/samsa/storage"

// StorageLog adapts a __consumer_offsets partition's storage.Log to Log.
//
// On a single node an append is committed once it is in the log, so the
// adapter advances the high watermark past it; consumers of
// __consumer_offsets (kafka-console-consumer with the offsets formatter)
// then see the records. With replication the broker supplies an adapter
// that waits for the ISR instead.
func StorageLog(l *storage.Log) Log { return storageLog{l} }

type storageLog struct{ l *storage.Log }

func (s storageLog) Append(batch []byte) error {
	info, err := s.l.Append(batch)
	if err != nil {
		return err
	}
	s.l.SetHighWatermark(info.LastOffset + 1)
	return nil
}

func (s storageLog) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) ([]byte, error) {
	return s.l.Read(offset, maxBytes, maxOffset, minOneBatch)
}

func (s storageLog) LogStartOffset() int64 { return s.l.LogStartOffset() }
func (s storageLog) LogEndOffset() int64   { return s.l.LogEndOffset() }
