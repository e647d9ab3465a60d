// Package suites runs other Kafka clients' own integration test suites (franz-go's
// pkg/kgo tests, segmentio/kafka-go's tests, Sarama's functional tests,
// librdkafka's, confluent-kafka-go's, KafkaJS's, kafka-python's, aiokafka's,
// confluent-kafka-python's and Confluent's JavaScript client's) against samsa:
// the tests their authors run against Apache Kafka in their CI, unmodified (the
// Go ones copied from the Go module cache).
//
// The ways to run them:
//
//   - run.sh runs a whole suite (or a -run selection) against samsa or against
//     Apache Kafka 4.4, each configured as the suite's own CI configures its broker,
//     and prints a PASS/FAIL/SKIP table per test (command suitetable):
//
//     compat-tests/suites/run.sh samsa franz-go
//     compat-tests/suites/run.sh kafka kafka-go -run 'TestConn$'
//
//   - sarama.sh runs Sarama's functional tests (IBM/sarama, build tag
//     functional) against five samsa nodes or five Kafka 4.4 nodes in a
//     private network namespace, behind toxiproxyd (a small proxy with the
//     part of Toxiproxy's API the tests use) and with a `docker` shim for the
//     tests that stop and start brokers:
//
//     compat-tests/suites/sarama.sh samsa
//     compat-tests/suites/sarama.sh kafka -run 'TestFuncAdmin'
//
//   - librdkafka.sh runs librdkafka's C test suite (tests/ of its sources,
//     built here) against one samsa or Kafka 4.4 node.
//
//   - confluent-go.sh runs confluent-kafka-go's integration tests (its
//     kafka/integration module, and its kafka package's tests) against samsa
//     or Kafka 4.4 set up as either of its CI's compose files (classic: two
//     single-node clusters, PLAINTEXT and SASL/PLAIN; consumer: one KRaft node,
//     KIP-848 consumers), in a private network namespace:
//
//     compat-tests/suites/confluent-go.sh samsa classic
//     compat-tests/suites/confluent-go.sh kafka consumer -run TestIntegration
//
//   - kafka-python.sh and aiokafka.sh run the Python clients' suites
//     (kafka-python's test/integration, aiokafka's tests/) unmodified against
//     one samsa or Kafka 4.4 node: kafka-python's fixtures start the broker
//     from KAFKA_ROOT, which points at kafka-root/ (shim scripts for either
//     broker); aiokafka's conftest starts a Docker image, for which
//     aiokafka-docker/ is a stand-in docker module. pytable.py prints the
//     per-test table of their JUnit XML, one run or two side by side.
//
//   - kafkajs.sh runs KafkaJS's jest suite (its git mirror, dev dependencies
//     from npm) against three samsa or three Kafka 4.4 nodes configured from
//     its CI's docker-compose file (TLS and SASL listeners on its fixed
//     ports), in a private network namespace:
//
//     compat-tests/suites/kafkajs.sh samsa src/admin
//
//   - confluent-js.sh runs Confluent's JavaScript client's test/promisified
//     (jest) and e2e (mocha) suites (its git mirror, librdkafka from the npm
//     tarball, the native addon built with node-gyp) against one samsa or
//     Kafka 4.4 node set up as its CI's compose files:
//
//     compat-tests/suites/confluent-js.sh samsa classic promisified test/promisified/admin
//
// The scripts (and kafka-root/bin/kafka-run-class.sh) share lib.sh: building samsa,
// Kafka 4.4's classpath, a broker JVM with Kafka's own start settings and a Log4j 2
// file appender, StorageTool format, stopping a process (TERM, KILL after 30 s),
// waiting until a broker answers (poll_ready), free loopback ports, the private
// network namespace, the docker shim's launcher, tool wrappers and suitetable.
//
//   - TestFranzGoSuite, part of the normal test run, runs a chosen subset of the kgo
//     tests against a harness-started samsa and fails if any chosen test does not
//     pass (a skipped one included). Its doc comment explains the choice.
//
// The suites' own test dependencies (modules their go.mod needs and samsa's does
// not) must be in the module cache: .ci/run downloads them with `go mod download`
// inside the cached module directory. Per-test results against both brokers and
// the explanation of every difference are in compat-tests/FINDINGS.md, "Other
// clients' own test suites"; the per-test tables of those runs are in results/.
//
// Parse and Table read `go test -json` output; they are shared by the test and by
// suitetable.
package suites
