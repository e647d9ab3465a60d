package handlers

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// countingIDs hands out 0, 1, 2... or fails with err.
type countingIDs struct {
	next int64
	err  error
}

func (c *countingIDs) Next() (int64, error) {
	if c.err != nil {
		return -1, c.err
	}
	c.next++
	return c.next - 1, nil
}

func TestInitProducerID(t *testing.T) {
	e := newAdminEnv(t)
	ids := &countingIDs{}
	e.d.Idempotence = NewIdempotence(ids)
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		minV    int16
		txnID   *string
		pid     int64
		epoch   int16
		code    int16
		wantNew bool
	}{
		{name: "idempotent", txnID: nil, pid: -1, epoch: -1, wantNew: true},
		// KIP-360 fields are ignored for a null transactional id: a fresh id.
		{name: "idempotent with current id", minV: 3, pid: 12, epoch: 3, wantNew: true},
		{name: "id without epoch", minV: 3, pid: 12, epoch: -1, code: kerr.InvalidRequest.Code},
		{name: "epoch without id", minV: 3, pid: -1, epoch: 0, code: kerr.InvalidRequest.Code},
		{name: "empty transactional id", txnID: str(""), pid: -1, epoch: -1, code: kerr.InvalidRequest.Code},
		{name: "transactional", txnID: str("tx"), pid: -1, epoch: -1, code: kerr.CoordinatorNotAvailable.Code},
	}
	for v := int16(0); v <= 5; v++ {
		for _, tc := range tests {
			if v < tc.minV {
				continue
			}
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = tc.txnID, tc.pid, tc.epoch
			req.TransactionTimeoutMillis = 60000
			before := ids.next
			resp := e.call(t, req, v).(*kmsg.InitProducerIDResponse)
			if resp.ErrorCode != tc.code {
				t.Fatalf("v%d %s: code %d, want %d", v, tc.name, resp.ErrorCode, tc.code)
			}
			if tc.wantNew {
				if resp.ProducerID != before || resp.ProducerEpoch != 0 {
					t.Fatalf("v%d %s: got %d/%d, want new id %d epoch 0", v, tc.name, resp.ProducerID, resp.ProducerEpoch, before)
				}
			} else if resp.ProducerID != -1 || resp.ProducerEpoch != -1 || ids.next != before {
				t.Fatalf("v%d %s: got %d/%d on error (allocated %d)", v, tc.name, resp.ProducerID, resp.ProducerEpoch, ids.next-before)
			}
		}
	}

	ids.err = errors.New("disk gone")
	resp := e.call(t, kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != kerr.UnknownServerError.Code || resp.ProducerID != -1 {
		t.Fatalf("allocator failure: code %d id %d", resp.ErrorCode, resp.ProducerID)
	}

	e.d.Idempotence = nil
	resp = e.call(t, kmsg.NewPtrInitProducerIDRequest(), 4).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("without idempotence: code %d", resp.ErrorCode)
	}
}
