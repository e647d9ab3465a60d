package shards

import "log/slog"

// maxSkipsLogged bounds the ERROR lines one load writes about records it
// skipped; the rest are counted.
const maxSkipsLogged = 10

// Skips are the records and batches a shard's load could not decode (a
// coordinator's load state embeds it): how many, and the first few for
// the load's log.
//
// A record the coordinator cannot decode is left out of the state rather
// than failing the load: one garbage record (written by a client in an old
// version, a bug, or damage) must not make the partition's groups or
// transactional ids unavailable forever. Kafka's CoordinatorLoaderImpl
// fails the load instead (it only skips unknown record types); samsa does
// better here.
type Skips struct {
	skipped int
	first   []skipped
}

type skipped struct {
	offset int64
	err    error
}

// Skip notes a record or batch at offset that does not decode.
func (s *Skips) Skip(offset int64, err error) {
	s.skipped++
	if len(s.first) < maxSkipsLogged {
		s.first = append(s.first, skipped{offset, err})
	}
}

// LogSkips logs, at ERROR, the first skipped records and how many more
// there were; who leads the messages ("coordinator", "txn"), topic is the
// coordinator's internal topic.
func (s *Skips) LogSkips(logger *slog.Logger, who, topic string) {
	for _, sk := range s.first {
		logger.Error(who+": skipped a record that does not decode while loading", "topic", topic, "offset", sk.offset, "err", sk.err)
	}
	if s.skipped > len(s.first) {
		logger.Error(who+": skipped more records that do not decode while loading", "topic", topic, "skipped", s.skipped)
	}
}
