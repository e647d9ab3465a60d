package broker

import (
	"errors"
	"sync"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// logCreateWorkers is how many new logs LogSyncer.Apply creates at once.
// Creating a log is a handful of fsyncs (partition.metadata, the
// partition's directory, the log directory that gained it) and little
// CPU; done one after another, a 5,000-partition topic took a minute on
// a busy disk, and the CreateTopics that made it waited for all of it
// (the controller publishes an image only after OnChange returned), long
// enough for clients to time out and retry. Concurrent fsyncs share the
// file system's journal commits.
const logCreateWorkers = 8

// logCreate is one log Apply found missing.
type logCreate struct {
	tp        storage.TopicPartition
	topic     *controller.Topic
	partition controller.Partition
	config    storage.LogConfig
}

// createLogs creates the missing logs of one image, each as createLog
// does, then queues their directory reports (checkDir). Logs whose
// directory storage picks among several (no directory from the image) are
// created one after another, after the others: storage picks by the
// number of logs each directory holds, which logs still being created
// would not count yet.
//
// REQUIRES: s.mu held.
func (s *LogSyncer) createLogs(creates []logCreate) {
	var placed, picked []logCreate
	for _, c := range creates {
		if s.placed(c) {
			placed = append(placed, c)
		} else {
			picked = append(picked, c)
		}
	}
	created := make([]bool, len(placed))
	if len(placed) == 1 {
		created[0] = s.createOne(placed[0])
	} else if len(placed) > 1 {
		work := make(chan int)
		var wg sync.WaitGroup
		for range min(logCreateWorkers, len(placed)) {
			wg.Go(func() {
				for i := range work {
					created[i] = s.createOne(placed[i])
				}
			})
		}
		for i := range placed {
			work <- i
		}
		close(work)
		wg.Wait()
	}
	for i, c := range placed {
		if created[i] {
			s.checkDir(c.tp, c.topic, c.partition)
		}
	}
	for _, c := range picked {
		if s.createOne(c) {
			s.checkDir(c.tp, c.topic, c.partition)
		}
	}
}

// placed says whether c's directory does not depend on the logs created
// before it: the image assigns one, or there is only one.
func (s *LogSyncer) placed(c logCreate) bool {
	if s.Config == nil || len(s.Config.LogDirs) <= 1 {
		return true
	}
	if s.dirs == nil {
		return false
	}
	_, ok := s.dirs.pathOf(c.partition.DirectoryOf(s.NodeID))
	return ok
}

// createOne creates c's log and says whether it exists now; a failure is
// logged.
func (s *LogSyncer) createOne(c logCreate) bool {
	_, err := s.createLog(c.tp, c.topic, c.partition, c.config)
	if errors.Is(err, storage.ErrLogOffline) {
		return false // logged when it was taken offline
	}
	if err != nil {
		s.Logger.Error("cannot create log", "topic", c.tp.Topic, "partition", c.tp.Partition, "err", err)
		return false
	}
	return true
}
