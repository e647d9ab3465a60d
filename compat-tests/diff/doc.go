// Package diff is the differential suite: it sends one script of raw
// Kafka requests to Apache Kafka 4.4 (compat-tests/kafkaref) and to samsa
// (compat-tests/harness) and compares the answers field by field.
//
// The script (Script, in script*.go) covers every API samsa advertises to
// clients and each of its versions (the test fails if one is never sent),
// read from the dispatch table of broker/handlers, with invalid inputs:
// bad names and configs, unknown topics and ids, stale epochs and
// generations, out-of-range offsets, oversized and corrupt batches,
// versions outside the advertised range. Each request goes out at exactly
// its version on a raw connection (Conn), so no client negotiates it away.
// Sequences that need state (topic ids, member ids, producer ids) learn it
// per broker, since each broker generates its own.
//
// Compare walks two responses with reflection. Lists whose order is not
// specified are matched by key (topic, group, config name); fields that
// legitimately differ are masked (fieldMasks: throttle times, error
// messages, hosts and ports, cluster id; topic, member and producer ids
// and timestamps compare only whether they are set). Every remaining
// difference is named
//
//	<API> v<version> <step> <field>: Kafka <value>, samsa <value>
//
// and must match a pattern of the "Differential suite: explained
// differences" section of compat-tests/FINDINGS.md, else the test fails;
// a pattern that no longer matches anything fails it too.
//
// Usage:
//
//	go test ./compat-tests/diff/                      # starts both brokers (~2 min)
//	DIFF_REPORT=/tmp/r.txt go test ./compat-tests/diff/   # every difference to a file
//	DIFF_DUMP="Fetch v4" DIFF_REPORT=/tmp/r.txt ...   # plus both answers of matching steps
//	DIFF_KAFKA_ADDR=host:port DIFF_SAMSA_ADDR=host:port ...   # fresh brokers already running
//	DIFF_SHARE=1 ...   # the share-group section (script_share_flow.go) before samsa advertises ShareGroupHeartbeat
//
// TestDiffFuzz is the randomized counterpart (fuzz.go, fuzz_gen.go): a
// seeded generator sends the same random requests to a fresh Kafka 4.4 and
// a fresh samsa and compares them the same way; its explained differences
// are under "Differential fuzzing: explained differences" in FINDINGS.md.
//
//	go test -run TestDiffFuzz ./compat-tests/diff/                   # seed 1, 400 steps
//	DIFF_FUZZ_SEED=7 DIFF_FUZZ_STEPS=3000 DIFF_FUZZ_REPORT=/tmp/f.txt go test -run TestDiffFuzz ...
//
// The test logs a summary: requests compared, equal, different (explained
// or not), and the differences counted per API and field.
package diff
