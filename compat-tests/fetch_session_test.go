package compattests

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// sessionLog counts franz-go's log lines about fetch session failures.
type sessionLog struct {
	mu     sync.Mutex
	resets []string
}

func (l *sessionLog) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (l *sessionLog) Log(level kgo.LogLevel, msg string, kv ...any) {
	m := strings.ToLower(msg)
	if strings.Contains(m, "session") && (strings.Contains(m, "reset") || strings.Contains(m, "sessionidnotfound")) {
		l.mu.Lock()
		l.resets = append(l.resets, fmt.Sprint(msg, kv))
		l.mu.Unlock()
	}
}

// fetchCounter counts Fetch requests written, through franz-go's hook.
type fetchCounter struct{ n atomic.Int64 }

func (c *fetchCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _ time.Duration, _ time.Duration, err error) {
	if key == 1 && err == nil {
		c.n.Add(1)
	}
}

var _ kgo.HookBrokerWrite = (*fetchCounter)(nil)

// TestFetchSessionsNoReset is the client-side regression test for issue 11
// item 15: samsa advanced a new fetch session's epoch on the fetch that
// created it, so franz-go's first incremental fetch got
// INVALID_FETCH_SESSION_EPOCH and it logged "resetting fetch session" on
// every other fetch (11,276 resets in 112 s). A consumer of six partitions
// reads records produced in small rounds over many fetches; franz-go must
// never reset its session, and every record must arrive.
func TestFetchSessionsNoReset(t *testing.T) {
	t.Parallel()
	b := harness.Start(t, harness.Options{})
	ctx := testContext(t, 2*time.Minute)
	fetches, resets := fetchSessionRun(t, ctx, b.Addr)
	if fetches < fetchSessionRounds {
		t.Errorf("only %d fetch requests; the test did not exercise sessions", fetches)
	}
	if len(resets) > 0 {
		t.Errorf("franz-go reset its fetch session %d times in %d fetches; first: %s", len(resets), fetches, resets[0])
	}
	t.Logf("%d fetch requests, %d session resets", fetches, len(resets))
}

const fetchSessionRounds = 30

// fetchSessionRun produces fetchSessionRounds rounds of records into a new
// six-partition topic on the broker at addr while a franz-go consumer reads
// each round, and returns the consumer's Fetch requests and the lines it
// logged about resetting its fetch session.
func fetchSessionRun(t *testing.T, ctx context.Context, addr string) (fetches int64, resets []string) {
	t.Helper()
	_, adm := newAdmin(t, addr)
	const topic = "fetch-sessions"
	if created, err := adm.CreateTopic(ctx, numPartitions, 1, nil, topic); err != nil || created.Err != nil {
		t.Fatalf("CreateTopic: %v / %v", err, created.Err)
	}
	waitTopicReady(t, ctx, adm, topic, numPartitions)

	logs := &sessionLog{}
	counter := &fetchCounter{}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond),
		kgo.WithLogger(logs), kgo.WithHooks(counter))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	const perRound = 12
	got := 0
	for round := 0; round < fetchSessionRounds; round++ {
		var recs []*kgo.Record
		for i := 0; i < perRound; i++ {
			recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "r%d-%d", round, i)})
		}
		if err := producer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", round, err)
		}
		for got < (round+1)*perRound {
			fs := consumer.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				t.Fatalf("round %d: consumed %d of %d: %v", round, got, (round+1)*perRound, err)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Errorf("fetch %s/%d: %v", topic, p, err) })
			got += fs.NumRecords()
		}
	}
	if got != fetchSessionRounds*perRound {
		t.Errorf("consumed %d records, want %d", got, fetchSessionRounds*perRound)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	return counter.n.Load(), append([]string(nil), logs.resets...)
}
