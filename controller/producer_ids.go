package controller

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProducerIDBlockSize is how many producer ids one allocation hands out,
// Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE.
const ProducerIDBlockSize = 1000

// decideAllocateProducerIDs is Kafka's ProducerIdControlManager
// generateNextProducerId: the next block starts at the image's
// NextProducerID (or at floor, when that is higher: the end recorded by the
// broker-local block file of older samsa versions, so ids handed out before
// the migration are never handed out again) and the record moves
// NextProducerID past it. A block that would pass the int64 limit is
// UNKNOWN_SERVER_ERROR, as in Kafka.
func decideAllocateProducerIDs(img *Image, brokerID int32, floor int64) (first int64, code int16, msg string, recs []Record) {
	if _, ok := img.Brokers[brokerID]; !ok {
		return -1, kerr.BrokerIDNotRegistered.Code, fmt.Sprintf("Broker %d is not registered.", brokerID), nil
	}
	first = max(img.NextProducerID, floor, 0)
	if first > math.MaxInt64-ProducerIDBlockSize {
		return -1, kerr.UnknownServerError.Code, "Exhausted all producerIds as the next block's end producerId has exceeded the int64 type limit", nil
	}
	return first, 0, "", []Record{ProducerIDsRecord{BrokerID: brokerID, NextProducerID: first + ProducerIDBlockSize}}
}

// AllocateProducerIDs commits and returns the next block of producer ids
// for broker brokerID: [first, first+ProducerIDBlockSize). Ids of a block
// are never handed out again, even when the broker that got it restarts
// without using them (they are skipped, as in Kafka). floor, when above
// the controller's next id, raises it (migration of a broker-local block
// file); pass 0 otherwise. Errors are Kafka's (a kerr error) or a commit
// failure.
func (c *Controller) AllocateProducerIDs(brokerID int32, floor int64) (first, size int64, err error) {
	var (
		code int16
		msg  string
	)
	err = c.write(false, func(img *Image) []Record {
		var recs []Record
		first, code, msg, recs = decideAllocateProducerIDs(img, brokerID, floor)
		return recs
	})
	if code != 0 {
		return -1, 0, fmt.Errorf("controller: allocate producer ids: %w: %s", kerr.ErrorForCode(code), msg)
	}
	if err != nil {
		return -1, 0, fmt.Errorf("controller: allocate producer ids: %w", err)
	}
	return first, ProducerIDBlockSize, nil
}
