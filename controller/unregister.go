package controller

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecordUnregisterBroker is the record type of UnregisterBrokerRecord.
const RecordUnregisterBroker RecordType = 13

// UnregisterBrokerRecord removes broker BrokerID's registration (Kafka's
// UnregisterBrokerRecord). Epoch is the epoch of the registration it
// removes, kept for the record's reader; applying it needs only the id.
type UnregisterBrokerRecord struct {
	BrokerID int32 `json:"broker_id"`
	Epoch    int64 `json:"epoch,omitempty"`
}

func (UnregisterBrokerRecord) recordType() RecordType { return RecordUnregisterBroker }

// decideUnregisterBroker removes broker id's registration as Kafka's
// UnregisterBroker does: an unknown id is BROKER_ID_NOT_REGISTERED; a
// registered broker, fenced or not, is first fenced (it leaves every ISR
// but where it is the last member, and its leaderships move, as
// decideFenceBroker decides), then unregistered. Its replicas stay in the
// partitions' replica lists, as in Kafka: a reassignment moves them. A
// broker process that is still running registers again with its next
// heartbeat round.
func decideUnregisterBroker(img *Image, id int32, unclean UncleanPolicy, elr ELRPolicy) (int16, []Record) {
	b, ok := img.Brokers[id]
	if !ok {
		return kerr.BrokerIDNotRegistered.Code, nil
	}
	_, recs := decideFenceBroker(img, id, true, unclean, elr)
	return 0, append(recs, UnregisterBrokerRecord{BrokerID: id, Epoch: b.Epoch})
}

// UnregisterBroker removes broker id's registration (Kafka's
// UnregisterBroker, key 64). It returns a Kafka error code: 0, or
// BROKER_ID_NOT_REGISTERED for an id that is not registered.
func (c *Controller) UnregisterBroker(id int32) (int16, error) {
	var code int16
	err := c.write(false, func(img *Image) []Record {
		var recs []Record
		code, recs = decideUnregisterBroker(img, id, c.opts.UncleanLeaderElection, c.elr(img))
		return recs
	})
	if err != nil {
		return 0, err
	}
	if code == 0 {
		c.liveness.Lock()
		delete(c.liveness.lastSeen, id)
		c.liveness.Unlock()
	}
	return code, nil
}

// applyUnregisterBroker removes a registration from the image.
func (b *builder) applyUnregisterBroker(r UnregisterBrokerRecord) error {
	if _, ok := b.img.Brokers[r.BrokerID]; !ok {
		return fmt.Errorf("%w: unregistration of unknown broker %d", ErrApply, r.BrokerID)
	}
	delete(b.brokers(), r.BrokerID)
	return nil
}
