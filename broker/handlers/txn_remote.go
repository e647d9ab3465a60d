package handlers

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/coordinator/txn"
	"github.com/samsa-broker/samsa/storage"
)

// remoteTxnTimeout bounds one produce-path call to another broker's
// transaction coordinator; a client produce waits for it.
const remoteTxnTimeout = 5 * time.Second

// txnCheck is the produce-path call to the transaction coordinator of
// transactionalID: add (the implicit add of transaction version 2) or
// verify (KIP-890 part 1) that tp is in the ongoing transaction. The local
// coordinator answers when it owns the id's __transaction_state partition;
// otherwise, as Kafka's AddPartitionsToTxnManager, the request goes to the
// broker leading that partition as AddPartitionsToTxn v5 in its broker form
// (verify_only false for the add, true for the check).
func (d *Deps) txnCheck(ctx context.Context, c *txn.Coordinator, add bool, transactionalID string, producerID int64, producerEpoch int16, tp storage.TopicPartition) int16 {
	var code int16
	if add {
		code = c.AddPartitionsImplicit(ctx, transactionalID, producerID, producerEpoch, tp)
	} else {
		code = c.VerifyProduce(ctx, transactionalID, producerID, producerEpoch, tp)
	}
	if code != kerr.NotCoordinator.Code || d.SendToBroker == nil || d.Config == nil || transactionalID == "" {
		return code
	}
	leader := d.txnCoordinatorNode(c, transactionalID)
	if leader < 0 || leader == d.Config.NodeID {
		return code
	}
	return d.remoteTxnCheck(ctx, leader, add, transactionalID, producerID, producerEpoch, tp)
}

// txnCoordinatorNode is the leader of transactionalID's
// __transaction_state partition in the current image, or -1.
func (d *Deps) txnCoordinatorNode(c *txn.Coordinator, transactionalID string) int32 {
	t := topicByName(d.Controller.Image(), txn.TransactionStateTopic)
	p := c.PartitionFor(transactionalID)
	if t == nil || p < 0 || int(p) >= len(t.Partitions) {
		return -1
	}
	return t.Partitions[p].Leader
}

// remoteTxnCheck sends the add or verification to broker coordinatorNode.
// A failed send is NOT_COORDINATOR: the client finds the coordinator again
// and retries, by which time the image may name another one.
func (d *Deps) remoteTxnCheck(ctx context.Context, coordinatorNode int32, add bool, transactionalID string, producerID int64, producerEpoch int16, tp storage.TopicPartition) int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = transactionalID, producerID, producerEpoch, !add
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = tp.Topic, []int32{tp.Partition}
	tx.Topics = append(tx.Topics, tt)
	req.Transactions = append(req.Transactions, tx)
	rctx, cancel := context.WithTimeout(ctx, remoteTxnTimeout)
	defer cancel()
	resp, err := d.SendToBroker(rctx, coordinatorNode, req)
	if err != nil {
		d.Logger.Warn("cannot reach the transaction coordinator", "broker", coordinatorNode, "transactional_id", transactionalID, "err", err)
		return kerr.NotCoordinator.Code
	}
	r, ok := resp.(*kmsg.AddPartitionsToTxnResponse)
	if !ok {
		return kerr.NotCoordinator.Code
	}
	if r.ErrorCode != 0 {
		return r.ErrorCode
	}
	for _, rt := range r.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				if t.Topic == tp.Topic && p.Partition == tp.Partition {
					return produceTxnCode(p.ErrorCode)
				}
			}
		}
	}
	return kerr.UnknownServerError.Code
}

// produceTxnCode turns a coordinator answer into what the produce path
// answers: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH there, as in Kafka.
func produceTxnCode(code int16) int16 {
	if code == kerr.ProducerFenced.Code {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}
