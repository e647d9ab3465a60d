package handlers

import "github.com/samsa-broker/samsa/controller"

// checkPartitionFiles asks Deps.PartitionFiles whether n more partitions
// fit in the broker's open file limit (issue 11 item 5: 20,000 partitions
// needed ~60,000 descriptors; the broker accepted them, then could neither
// serve nor restart). nil when there is no check or they fit.
func (d *Deps) checkPartitionFiles(n int64) *controller.RequestError {
	if d.PartitionFiles == nil || n <= 0 {
		return nil
	}
	return d.PartitionFiles(int(min(n, 1<<31-1)))
}

// createTopicsPartitionCount is the number of partitions creates asks for:
// an assignment's length, or num_partitions (-1: the broker default).
// Topics img already has are not counted: they get TOPIC_ALREADY_EXISTS
// and open no file. (A client that timed out waiting for a large topic's
// logs sends the same CreateTopics again; counting the topic twice
// answered its retry POLICY_VIOLATION.)
func createTopicsPartitionCount(img *controller.Image, creates []controller.CreateTopic, defaultPartitions int32) int64 {
	var n int64
	for _, ct := range creates {
		if img != nil && img.Topics[ct.Name] != nil {
			continue
		}
		switch {
		case len(ct.Assignment) > 0:
			n += int64(len(ct.Assignment))
		case ct.NumPartitions == -1:
			n += int64(max(defaultPartitions, 1))
		case ct.NumPartitions > 0:
			n += int64(ct.NumPartitions)
		}
	}
	return n
}

// createPartitionsCount is the number of partitions grows adds to known
// topics of img.
func createPartitionsCount(img *controller.Image, grows []controller.CreatePartitionsTopic) int64 {
	var n int64
	for _, g := range grows {
		if t := img.Topic(g.Topic); t != nil && int(g.Count) > len(t.Partitions) {
			n += int64(int(g.Count) - len(t.Partitions))
		}
	}
	return n
}
