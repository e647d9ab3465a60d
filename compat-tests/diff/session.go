package diff

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/wire"
)

// Step is one request of a script and what the broker answered.
type Step struct {
	// Name identifies the step within the script; equal on both brokers.
	Name string
	Key  int16
	// Version is the request's version.
	Version int16
	Resp    kmsg.Response
	// Outcome is "" for a decoded response, else "closed" (the broker
	// closed the connection) or the transport error.
	Outcome string
	// Took is how long the broker took to answer.
	Took time.Duration
}

// Session runs a script against one broker and records its steps. What
// the script learns (topic ids, member ids, producer ids) is per broker,
// since the two brokers generate different ones.
type Session struct {
	Broker string
	// BaseTS is the create time of every record the script produces. Both
	// sessions of a run share it, so the brokers store byte-identical
	// batches; it must be recent, or time retention (retention.ms, 7 days)
	// deletes the records while the script runs.
	BaseTS int64
	conn   *Conn
	Steps  []Step

	topicIDs map[string][16]byte
	// fatal is the first transport failure that is not a closed connection;
	// the script stops at it.
	fatal error
}

// ErrDiffTimeout is returned by a wait that ran out of time.
var ErrDiffTimeout = errors.New("diff: timed out")

// NewSession connects to addr; baseTS is the records' create time.
func NewSession(broker, addr string, baseTS int64) (*Session, error) {
	c, err := Dial(addr, 60*time.Second)
	if err != nil {
		return nil, err
	}
	return &Session{Broker: broker, BaseTS: baseTS, conn: c, topicIDs: map[string][16]byte{}}, nil
}

// Close closes the session's connection.
func (s *Session) Close() error { return s.conn.Close() }

// Err returns the first transport failure of the session.
func (s *Session) Err() error { return s.fatal }

// Do sends req at version v and records the answer as step name. It
// returns the response, or nil when the broker closed the connection.
func (s *Session) Do(name string, v int16, req kmsg.Request) kmsg.Response {
	req.SetVersion(v)
	st := Step{Name: fmt.Sprintf("%s v%d %s", kmsg.NameForKey(req.Key()), v, name), Key: req.Key(), Version: v}
	if s.fatal != nil {
		st.Outcome = "skipped"
		s.Steps = append(s.Steps, st)
		return nil
	}
	begin := time.Now()
	resp, err := s.conn.Do(req)
	st.Took = time.Since(begin)
	switch {
	case errors.Is(err, ErrDiffClosed):
		st.Outcome = "closed"
	case err != nil:
		st.Outcome = err.Error()
		s.fatal = fmt.Errorf("%s: step %s: %w", s.Broker, st.Name, err)
	default:
		st.Resp = resp
		s.learn(resp)
	}
	s.Steps = append(s.Steps, st)
	return resp
}

// Quiet sends req without recording it (set-up and polling).
func (s *Session) Quiet(v int16, req kmsg.Request) (kmsg.Response, error) {
	req.SetVersion(v)
	resp, err := s.conn.Do(req)
	if err == nil {
		s.learn(resp)
	}
	return resp, err
}

// learn keeps the topic ids the broker hands out.
func (s *Session) learn(resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == 0 && t.TopicID != [16]byte{} {
				s.topicIDs[t.Topic] = t.TopicID
			}
		}
	case *kmsg.MetadataResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == 0 && t.Topic != nil && t.TopicID != [16]byte{} {
				s.topicIDs[*t.Topic] = t.TopicID
			}
		}
	}
}

// TopicID returns the id the broker gave topic, the zero id if unknown.
func (s *Session) TopicID(topic string) [16]byte { return s.topicIDs[topic] }

// WaitTopics polls Metadata until every topic has a leader for each of
// its partitions (or has gone, when gone is true), without recording.
func (s *Session) WaitTopics(timeout time.Duration, gone bool, topics ...string) error {
	deadline := time.Now().Add(timeout)
	for {
		req := kmsg.NewPtrMetadataRequest()
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := s.Quiet(12, req)
		if err != nil {
			return err
		}
		ready := true
		for _, t := range resp.(*kmsg.MetadataResponse).Topics {
			if gone {
				ready = ready && t.ErrorCode != 0
				continue
			}
			if t.ErrorCode != 0 || len(t.Partitions) == 0 {
				ready = false
			}
			for _, p := range t.Partitions {
				ready = ready && p.ErrorCode == 0 && p.Leader >= 0
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s: topics %v (gone=%v)", ErrDiffTimeout, s.Broker, topics, gone)
		}
		// Poll gently: metadata propagation takes milliseconds.
		<-time.After(50 * time.Millisecond)
	}
}

// normalize puts a response in a canonical order where the order is not
// specified (listings), and clears what depends on the broker's clock in
// record batches (the partition leader epoch is compared, not the CRC of
// log-append-time batches).
func normalize(resp kmsg.Response) {
	normalizeQuotas(resp)
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		sort.SliceStable(r.Topics, func(i, j int) bool { return deref(r.Topics[i].Topic) < deref(r.Topics[j].Topic) })
		for i := range r.Topics {
			ps := r.Topics[i].Partitions
			sort.SliceStable(ps, func(a, b int) bool { return ps[a].Partition < ps[b].Partition })
		}
	case *kmsg.ListGroupsResponse:
		sort.SliceStable(r.Groups, func(i, j int) bool { return r.Groups[i].Group < r.Groups[j].Group })
	case *kmsg.ListTransactionsResponse:
		sort.SliceStable(r.TransactionStates, func(i, j int) bool {
			return r.TransactionStates[i].TransactionalID < r.TransactionStates[j].TransactionalID
		})
	case *kmsg.DescribeLogDirsResponse:
		for i := range r.Dirs {
			sort.SliceStable(r.Dirs[i].Topics, func(a, b int) bool { return r.Dirs[i].Topics[a].Topic < r.Dirs[i].Topics[b].Topic })
			for j := range r.Dirs[i].Topics {
				ps := r.Dirs[i].Topics[j].Partitions
				sort.SliceStable(ps, func(a, b int) bool { return ps[a].Partition < ps[b].Partition })
			}
		}
	case *kmsg.DescribeConfigsResponse:
		maskConfigValues(r)
	case *kmsg.FetchResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				p := &r.Topics[i].Partitions[j]
				p.RecordBatches = canonicalBatches(p.RecordBatches)
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// canonicalBatches rewrites what the broker generates in a stored batch
// (the max timestamp of a log-append-time batch, the producer id) to fixed
// values and recomputes the CRC, so two brokers' copies of one produced
// batch compare equal byte for byte.
func canonicalBatches(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	out := append([]byte(nil), b...)
	_, _ = wire.SplitBatches(out, func(batch []byte, h wire.BatchHeader) error {
		if h.Attributes&0x08 != 0 {
			wire.SetLogAppendTime(batch, 0)
		}
		if h.ProducerID >= 0 {
			binary.BigEndian.PutUint64(batch[43:], 1000)
			wire.RecomputeCRC(batch)
		}
		return nil
	})
	return out
}

// retriable are the error codes of a coordinator that is still starting:
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE,
// NOT_COORDINATOR, CONCURRENT_TRANSACTIONS. Kafka answers them for a
// moment after the first use creates an internal topic; samsa may not.
var retriable = map[int16]bool{14: true, 15: true, 16: true, 51: true}

// Settle sends req (unrecorded) until the broker answers it with an error
// code that is not retriable, so the recorded steps after it do not
// depend on how fast each broker loads its coordinators.
func (s *Session) Settle(timeout time.Duration, v int16, req kmsg.Request, code func(kmsg.Response) int16) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := s.Quiet(v, req)
		if err != nil {
			return err
		}
		if !retriable[code(resp)] {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s: %s still answers %d", ErrDiffTimeout, s.Broker, kmsg.NameForKey(req.Key()), code(resp))
		}
		<-time.After(100 * time.Millisecond)
	}
}

// SettleCoordinator waits until the coordinator of key (type 0 group,
// 1 transaction) is found and has loaded its partition: Kafka answers
// FindCoordinator as soon as the partition has a leader, and
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS until it has read it.
func (s *Session) SettleCoordinator(typ int8, key string) error {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey = typ, key
	if err := s.Settle(60*time.Second, 3, req, func(r kmsg.Response) int16 {
		return r.(*kmsg.FindCoordinatorResponse).ErrorCode
	}); err != nil {
		return err
	}
	if typ == 0 {
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{key}
		return s.Settle(60*time.Second, 5, dg, func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode
		})
	}
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{key}
	return s.Settle(60*time.Second, 0, dt, func(r kmsg.Response) int16 {
		return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
	})
}
