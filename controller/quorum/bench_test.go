package quorum

import (
	"context"
	"testing"
	"time"

	"github.com/samsa-broker/samsa/controller"
)

// BenchmarkProposeOneVoter: one metadata batch committed by a quorum of one
// (raft-boltdb fsyncs every entry), as every single-node write does.
func BenchmarkProposeOneVoter(b *testing.B) {
	q, trans := openOneB(b)
	defer trans.Close()
	defer q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := q.WaitLeading(ctx); err != nil {
		b.Fatal(err)
	}
	var v string
	for i := 0; b.Loop(); i++ {
		v = string(rune('a' + i%26))
		rec := controller.ConfigRecord{ResourceType: controller.ConfigResourceBroker, Name: "x", Value: &v}
		if err := q.Propose(q.Machine().Image().Offset, []controller.Record{rec}); err != nil {
			b.Fatal(err)
		}
	}
}
