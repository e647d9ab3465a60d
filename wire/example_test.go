package wire_test

import (
	"errors"
	"fmt"

	"github.com/samsa-broker/samsa/wire"
)

func ExampleValidateProduce() {
	batch, err := wire.EncodeBatch(wire.BatchSpec{
		BaseTimestamp: 1_700_000_000_000,
		Compression:   wire.CompressionZstd,
		ProducerID:    -1, ProducerEpoch: -1, BaseSequence: -1,
		Records: []wire.Record{
			{Key: []byte("k"), Value: []byte("v1")},
			{OffsetDelta: 1, Value: []byte("v2")},
		},
	})
	if err != nil {
		panic(err)
	}

	// Produce v6 may not carry zstd.
	_, err = wire.ValidateProduce(batch, wire.ValidateOptions{MaxBatchBytes: 1 << 20, ProduceVersion: 6})
	var be *wire.BatchError
	if errors.As(err, &be) {
		fmt.Println("v6 error code:", be.Code)
	}

	// Produce v9 accepts it; storage then assigns offsets in place.
	hdrs, err := wire.ValidateProduce(batch, wire.ValidateOptions{MaxBatchBytes: 1 << 20, ProduceVersion: 9, DeepValidate: true})
	if err != nil {
		panic(err)
	}
	wire.SetBaseOffset(batch, 100)
	_, recs, err := wire.DecodeRecords(batch)
	if err != nil {
		panic(err)
	}
	fmt.Println("records:", hdrs[0].NumRecords, "last offset:", 100+int64(hdrs[0].LastOffsetDelta), "first value:", string(recs[0].Value))
	// Output:
	// v6 error code: 76
	// records: 2 last offset: 101 first value: v1
}
