package compattests

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
)

// adminOutcome is what the client was told about one metadata change.
type adminOutcome struct {
	// ok: answered success. unknown: an error that leaves the outcome open
	// (a timeout, a lost connection, NOT_CONTROLLER after retries); such a
	// change may or may not be committed.
	ok, unknown bool
	id          kadm.TopicID // CreateTopics: the id answered
	err         error
}

// adminStream sends, in a loop until stop, CreateTopics, IncrementalAlterConfigs and
// (every third topic) DeleteTopics, one request at a time, and records every answer.
type adminStream struct {
	adm     *kadm.Client
	mu      sync.Mutex
	created map[string]adminOutcome
	altered map[string][]alterOutcome // by topic, in send order
	deleted map[string]adminOutcome
	slowest time.Duration
	slowAt  time.Time
	ops     int
}

type alterOutcome struct {
	value string
	adminOutcome
}

func outcome(err error) adminOutcome {
	if err == nil {
		return adminOutcome{ok: true}
	}
	return adminOutcome{unknown: true, err: err}
}

func (s *adminStream) timed(ctx context.Context, f func(ctx context.Context)) {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	f(rctx)
	cancel()
	d := time.Since(start)
	s.mu.Lock()
	s.ops++
	if d > s.slowest {
		s.slowest, s.slowAt = d, start
	}
	s.mu.Unlock()
}

func (s *adminStream) run(ctx context.Context, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		name := fmt.Sprintf("ctl-%04d", i)
		s.timed(ctx, func(ctx context.Context) {
			r, err := s.adm.CreateTopic(ctx, 1, 2, nil, name)
			o := outcome(err)
			if err == nil && r.Err != nil {
				// Any error leaves the outcome open: TOPIC_ALREADY_EXISTS is an
				// earlier attempt of this request (a retry inside the client)
				// that committed, NOT_CONTROLLER or a timeout may have committed.
				o = adminOutcome{err: r.Err, unknown: true}
			}
			o.id = r.ID
			s.mu.Lock()
			s.created[name] = o
			s.mu.Unlock()
		})
		for j := range 2 {
			value := strconv.Itoa(3_600_000 + 1000*i + j)
			s.timed(ctx, func(ctx context.Context) {
				rs, err := s.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr(value)}}, name)
				o := outcome(err)
				if err == nil && len(rs) == 1 && rs[0].Err != nil {
					o = adminOutcome{err: rs[0].Err, unknown: true}
				}
				s.mu.Lock()
				s.altered[name] = append(s.altered[name], alterOutcome{value, o})
				s.mu.Unlock()
			})
		}
		if i%3 == 0 {
			s.timed(ctx, func(ctx context.Context) {
				rs, err := s.adm.DeleteTopics(ctx, name)
				o := outcome(err)
				if err == nil && rs[name].Err != nil {
					o = adminOutcome{err: rs[name].Err, unknown: true}
				}
				s.mu.Lock()
				s.deleted[name] = o
				s.mu.Unlock()
			})
		}
	}
}

// TestControllerKillUnderAdminStream is issue 13's fault case: three combined nodes, a
// client sending CreateTopics, IncrementalAlterConfigs and DeleteTopics one after the
// other without pause, and the active controller SIGKILLed in the middle of it. A new
// controller takes over (the figure is logged, from the kill to the moment the
// survivors agree on a live controller, and the longest single request), the stream
// goes on, the killed node restarts, and then every node (the restarted one too) must
// show every change answered with success, and none applied twice: a topic answered
// created has the topic id of that answer everywhere (a create applied twice would
// have made a new id), a topic answered deleted exists nowhere, and a topic's
// retention.ms is the last value answered with success, or a later one whose answer
// was an error (its outcome was unknown).
func TestControllerKillUnderAdminStream(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 3, harness.ClusterOptions{Env: []string{
		"KAFKA_BROKER_SESSION_TIMEOUT_MS=3000", "KAFKA_BROKER_HEARTBEAT_INTERVAL_MS=500",
	}})
	ctx := testContext(t, 4*time.Minute)
	down := map[int]bool{}
	activeController(t, ctx, c, down, 30*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RetryTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	s := &adminStream{adm: kadm.NewClient(cl), created: map[string]adminOutcome{}, altered: map[string][]alterOutcome{}, deleted: map[string]adminOutcome{}}
	stop := make(chan struct{})
	streamDone := make(chan struct{})
	go func() { defer close(streamDone); s.run(ctx, stop) }()

	waitOps := func(n int) {
		t.Helper()
		if !pollUntil(60*time.Second, func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.ops >= n }) {
			t.Fatalf("the admin stream made fewer than %d requests", n)
		}
	}
	waitOps(30)
	victim := activeController(t, ctx, c, down, 15*time.Second)
	s.mu.Lock()
	before := s.ops
	s.mu.Unlock()
	killed := time.Now()
	c.Brokers[victim].Kill(t)
	down[victim] = true
	next := activeController(t, ctx, c, down, 30*time.Second)
	takeover := time.Since(killed)
	waitOps(before + 30)
	c.Brokers[victim].Restart(t)
	delete(down, victim)
	waitOps(before + 45)
	close(stop)
	<-streamDone
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("killed node %d (active controller) after %d requests; node %d was the agreed active controller %v later; %d requests in all, the slowest %v (sent %v after the kill)",
		victim+1, before, next+1, takeover.Round(time.Millisecond), s.ops, s.slowest.Round(time.Millisecond), s.slowAt.Sub(killed).Round(time.Millisecond))

	// Every node, the restarted one too, must converge on the same answer.
	for i := range c.Brokers {
		var problems []string
		if !pollUntil(60*time.Second, func() bool {
			problems = checkAdminOutcomes(ctx, cl, int32(i+1), s)
			return len(problems) == 0
		}) {
			t.Errorf("node %d: %d problems, first: %v", i+1, len(problems), head(problems))
		}
	}
	var unknown int
	for _, o := range s.created {
		if o.unknown {
			unknown++
		}
	}
	alters := 0
	for _, a := range s.altered {
		alters += len(a)
	}
	t.Logf("checked on 3 nodes: %d topics created (%d with an unknown outcome), %d deleted, %d retention.ms changes", len(s.created), unknown, len(s.deleted), alters)
}

// checkAdminOutcomes compares node's metadata and topic configs with the stream's
// answers and returns what does not match.
func checkAdminOutcomes(ctx context.Context, cl *kgo.Client, node int32, s *adminStream) []string {
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = nil // every topic
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cl.Broker(int(node)).Request(rctx, meta)
	if err != nil {
		return []string{fmt.Sprintf("metadata: %v", err)}
	}
	ids := map[string][16]byte{}
	for _, t := range resp.(*kmsg.MetadataResponse).Topics {
		if t.Topic != nil && t.ErrorCode == 0 {
			ids[*t.Topic] = t.TopicID
		}
	}
	var problems []string
	var live []string
	for name, o := range s.created {
		id, exists := ids[name]
		d, deleteAsked := s.deleted[name]
		switch {
		case d.ok && exists:
			problems = append(problems, name+": answered deleted, still exists")
		case o.ok && !exists && !deleteAsked:
			problems = append(problems, name+": answered created, does not exist")
		case o.ok && exists && id != [16]byte(o.id):
			problems = append(problems, fmt.Sprintf("%s: answered created with id %x, exists with id %x (created twice?)", name, o.id, id))
		}
		if exists {
			live = append(live, name)
		}
	}
	for name := range ids {
		if _, ok := s.created[name]; !ok && len(name) > 4 && name[:4] == "ctl-" {
			problems = append(problems, name+": exists, never asked for")
		}
	}
	if len(live) == 0 {
		return problems
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, name := range live {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, name, []string{"retention.ms"}
		req.Resources = append(req.Resources, r)
	}
	dresp, err := cl.Broker(int(node)).Request(rctx, req)
	if err != nil {
		return append(problems, fmt.Sprintf("describe configs: %v", err))
	}
	for _, r := range dresp.(*kmsg.DescribeConfigsResponse).Resources {
		var value string
		for _, c := range r.Configs {
			if c.Name == "retention.ms" && c.Value != nil {
				value = *c.Value
			}
		}
		// The value must be the last one answered with success, or one sent after
		// it whose outcome is unknown; with no success, the default or any sent one.
		alters := s.altered[r.ResourceName]
		lastOK := -1
		for i, a := range alters {
			if a.ok {
				lastOK = i
			}
		}
		allowed := lastOK < 0 && value == "604800000"
		for i := max(lastOK, 0); i < len(alters); i++ {
			if alters[i].value == value && (i == lastOK || alters[i].unknown || lastOK < 0) {
				allowed = true
			}
		}
		if !allowed {
			problems = append(problems, fmt.Sprintf("%s: retention.ms %s, answers %+v", r.ResourceName, value, alters))
		}
	}
	return problems
}
