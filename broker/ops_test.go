package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/config"
)

// scrape is one /metrics response: series (name{labels}) to value.
type scrape map[string]float64

// sum adds the series of name whose labels include every want pair.
func (s scrape) sum(name string, want ...string) (float64, bool) {
	var total float64
	found := false
	for series, v := range s {
		n, labels, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for i := 0; i+1 < len(want); i += 2 {
			if !strings.Contains("{"+labels, fmt.Sprintf("%s=%q", want[i], want[i+1])) {
				ok = false
				break
			}
		}
		if ok {
			total += v
			found = true
		}
	}
	return total, found
}

func getHTTP(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func scrapeMetrics(t *testing.T, base string) scrape {
	t.Helper()
	code, body := getHTTP(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	out := scrape{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad sample line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsAndHealth runs a node with samsa.http.listener, drives it
// with franz-go (produce, consume, a group commit, a failing produce) and
// checks that /metrics has the JMX exporter's and kafka_exporter's names
// with values that moved, and that /healthz and /readyz answer.
func TestMetricsAndHealth(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "samsa.http.listener=127.0.0.1:0", "offsets.topic.num.partitions=3")
	closed := false
	defer func() {
		if !closed {
			closeTestNode(t, n)
		}
	}()
	base := "http://" + n.HTTPAddr().String()
	if code, body := getHTTP(t, base+"/healthz"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := getHTTP(t, base+"/readyz"); code != 200 || strings.TrimSpace(body) != "ready" {
		t.Fatalf("/readyz: %d %q", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := n.Addrs()[0].String()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("m1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "m1"); err != nil {
		t.Fatal(err)
	}
	const records = 50
	var batch []*kgo.Record
	for i := 0; i < records; i++ {
		batch = append(batch, &kgo.Record{Value: []byte(strings.Repeat("x", 100))})
	}
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Clients may not write to an internal topic: INVALID_TOPIC_EXCEPTION,
	// which Kafka counts as a failed produce.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Value: []byte("x")}).FirstErr(); err == nil {
		t.Fatal("produce to __consumer_offsets succeeded")
	}
	offs := kadm.Offsets{}
	offs.AddOffset("m1", 0, 10, -1)
	if resp, err := adm.CommitOffsets(ctx, "g1", offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v / %v", err, resp.Error())
	}
	consumeAll(t, ctx, addr, "m1", records)

	s := scrapeMetrics(t, base)
	expect := func(name string, check func(float64) bool, labels ...string) {
		t.Helper()
		v, ok := s.sum(name, labels...)
		if !ok {
			t.Errorf("%s%v: missing", name, labels)
			return
		}
		if !check(v) {
			t.Errorf("%s%v = %v", name, labels, v)
		}
	}
	eq := func(want float64) func(float64) bool { return func(v float64) bool { return v == want } }
	positive := func(v float64) bool { return v > 0 }
	any := func(float64) bool { return true }

	expect("kafka_server_brokertopicmetrics_messagesin_total", eq(records), "topic", "m1")
	expect("kafka_server_brokertopicmetrics_messagesin_total", eq(records), "topic", "")
	expect("kafka_server_brokertopicmetrics_bytesin_total", positive, "topic", "m1")
	expect("kafka_server_brokertopicmetrics_bytesout_total", positive, "topic", "m1")
	expect("kafka_server_brokertopicmetrics_failedproducerequests_total", positive, "topic", "__consumer_offsets")
	expect("kafka_server_brokertopicmetrics_failedproducerequests_total", eq(0), "topic", "m1")
	expect("kafka_server_brokertopicmetrics_failedfetchrequests_total", eq(0), "topic", "m1")
	expect("kafka_server_brokertopicmetrics_totalfetchrequests_total", positive, "topic", "m1")
	expect("kafka_network_requestmetrics_requests_total", positive, "request", "Produce")
	expect("kafka_network_requestmetrics_requests_total", positive, "request", "FetchConsumer")
	expect("kafka_network_requestmetrics_requests_total", positive, "request", "ApiVersions")
	expect("kafka_network_requestmetrics_requests_total", positive, "request", "OffsetCommit")
	expect("kafka_network_requestmetrics_errors_total", positive, "request", "Produce", "error", "NONE")
	expect("kafka_network_requestmetrics_errors_total", positive, "request", "Produce", "error", "INVALID_TOPIC_EXCEPTION")
	expect("kafka_network_requestmetrics_totaltimems_count", positive, "request", "Produce")
	expect("kafka_network_requestmetrics_totaltimems", any, "request", "Produce", "quantile", "0.99")
	expect("kafka_network_requestmetrics_totaltimems", any, "request", "Metadata", "quantile", "0.50")
	expect("kafka_network_requestmetrics_requestqueuetimems_count", positive, "request", "Produce")
	expect("kafka_network_requestmetrics_localtimems", any, "request", "FetchConsumer", "quantile", "0.999")
	expect("kafka_network_requestmetrics_remotetimems_count", positive, "request", "FetchConsumer")
	expect("kafka_network_requestmetrics_remotetimems", any, "request", "Produce", "quantile", "0.99")
	expect("kafka_network_requestmetrics_responsesendtimems_count", positive, "request", "Produce")
	expect("kafka_network_requestmetrics_responsesendtimems_count", positive, "request", "FetchConsumer")
	expect("kafka_server_socket_server_metrics_connection_count", positive, "listener", "PLAINTEXT")
	expect("kafka_server_replicamanager_partitioncount", func(v float64) bool { return v >= 4 }) // m1 + 3 of __consumer_offsets
	expect("kafka_server_replicamanager_leadercount", func(v float64) bool { return v >= 4 })
	expect("kafka_server_replicamanager_underreplicatedpartitions", eq(0))
	expect("kafka_server_replicamanager_underminisrpartitioncount", eq(0))
	expect("kafka_controller_kafkacontroller_activecontrollercount", eq(1))
	expect("kafka_controller_kafkacontroller_offlinepartitionscount", eq(0))
	expect("kafka_controller_kafkacontroller_fencedbrokercount", eq(0))
	expect("kafka_controller_kafkacontroller_activebrokercount", eq(1))
	expect("kafka_log_log_logendoffset", eq(records), "topic", "m1", "partition", "0")
	expect("kafka_log_log_logstartoffset", eq(0), "topic", "m1", "partition", "0")
	expect("kafka_log_log_size", positive, "topic", "m1", "partition", "0")
	expect("kafka_topic_partition_current_offset", eq(records), "topic", "m1", "partition", "0")
	expect("kafka_consumergroup_current_offset", eq(10), "consumergroup", "g1", "topic", "m1", "partition", "0")
	expect("kafka_consumergroup_lag", eq(records-10), "consumergroup", "g1", "topic", "m1", "partition", "0")
	expect("kafka_consumergroup_lag_sum", eq(records-10), "consumergroup", "g1", "topic", "m1")
	expect("kafka_server_kafkaserver_brokerstate", eq(3))
	expect("kafka_network_requestchannel_requestqueuesize", func(v float64) bool { return v >= 0 })
	expect("go_goroutines", positive)
	expect("process_cpu_seconds_total", any)

	// Counters move: a second round of produces adds to them.
	if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	s = scrapeMetrics(t, base)
	expect("kafka_server_brokertopicmetrics_messagesin_total", eq(2*records), "topic", "m1")
	expect("kafka_consumergroup_lag", eq(2*records-10), "consumergroup", "g1", "topic", "m1", "partition", "0")

	// A deleted topic's series go.
	if _, err := adm.DeleteTopics(ctx, "m1"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s = scrapeMetrics(t, base)
		_, inCounters := s.sum("kafka_server_brokertopicmetrics_messagesin_total", "topic", "m1")
		_, inLogs := s.sum("kafka_log_log_logendoffset", "topic", "m1")
		if !inCounters && !inLogs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("series of deleted topic m1 still there (counters %v, logs %v)", inCounters, inLogs)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond): // poll interval
		}
	}

	cl.Close()
	closeTestNode(t, n)
	closed = true
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Fatal("HTTP listener still answers after Close")
	}
}

// TestHTTPListenerOff checks that without samsa.http.listener nothing
// listens and requests are not observed.
func TestHTTPListenerOff(t *testing.T) {
	n := startTestNode(t, t.TempDir())
	defer closeTestNode(t, n)
	if n.HTTPAddr() != nil || n.srv.observer != nil {
		t.Fatalf("HTTP listener %v, observer %v; want none", n.HTTPAddr(), n.srv.observer)
	}
}

// TestHTTPListenerBindFailure: an address in use refuses the start, as a
// Kafka listener's would.
func TestHTTPListenerBindFailure(t *testing.T) {
	n := startTestNode(t, t.TempDir(), "samsa.http.listener=127.0.0.1:0")
	defer closeTestNode(t, n)
	args := []string{"--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "log.dirs=" + t.TempDir(),
		"--override", "samsa.http.listener=" + n.HTTPAddr().String()}
	cfg, err := configLoad(args)
	if err != nil {
		t.Fatal(err)
	}
	if n2, err := StartNode(cfg, discardLogger()); err == nil {
		closeTestNode(t, n2)
		t.Fatal("second node started on a used HTTP address")
	} else if !strings.Contains(err.Error(), "samsa.http.listener") {
		t.Fatalf("error %v does not name samsa.http.listener", err)
	}
}

func configLoad(args []string) (*config.Config, error) { return config.Load(args, nil) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
