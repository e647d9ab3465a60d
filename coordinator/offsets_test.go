package coordinator

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExpiredOffsets checks the KIP-211 expiry rules of expiredOffsets.
func TestExpiredOffsets(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	const retention = time.Hour
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"sub"}
	consumerMember := &member{id: "m", protocols: []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}}
	for _, tc := range []struct {
		name         string
		state        State
		protocolType string
		stateSince   time.Duration // after t0
		members      []*member
		commits      map[string]time.Duration // topic -> commit time after t0
		now          time.Duration
		want         string
	}{
		{"simple group: by commit time", Empty, "", 0, nil,
			map[string]time.Duration{"a": 0, "b": 30 * time.Minute}, 70 * time.Minute, "[{a 0}]"},
		{"empty consumer group: from when it became empty", Empty, "consumer", 50 * time.Minute, nil,
			map[string]time.Duration{"a": 0, "b": 0}, 100 * time.Minute, "[]"},
		{"empty consumer group: retention passed", Empty, "consumer", 50 * time.Minute, nil,
			map[string]time.Duration{"a": 0}, 110 * time.Minute, "[{a 0}]"},
		{"empty consumer group: a later commit counts from itself", Empty, "consumer", 10 * time.Minute, nil,
			map[string]time.Duration{"a": 0, "b": 40 * time.Minute}, 80 * time.Minute, "[{a 0}]"},
		{"stable consumer group: unsubscribed topics only", Stable, "consumer", 0, []*member{consumerMember},
			map[string]time.Duration{"sub": 0, "gone": 0}, 2 * time.Hour, "[{gone 0}]"},
		{"rebalancing: nothing expires", PreparingRebalance, "consumer", 0, []*member{consumerMember},
			map[string]time.Duration{"gone": 0}, 2 * time.Hour, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGroup(&GroupConfig{}, "g", t0.Add(tc.stateSince))
			g.state, g.protocolType, g.members = tc.state, tc.protocolType, tc.members
			if len(tc.members) > 0 {
				g.protocol = "range"
			}
			for topic, at := range tc.commits {
				g.offsets[topicPartition{topic, 0}] = offsetEntry{offset: 1, commitTime: t0.Add(at)}
			}
			got := g.expiredOffsets(t0.Add(tc.now), retention)
			s := "["
			for i, tp := range got {
				if i > 0 {
					s += " "
				}
				s += fmt.Sprintf("{%s %d}", tp.topic, tp.partition)
			}
			if s += "]"; s != tc.want {
				t.Fatalf("expired %s, want %s", s, tc.want)
			}
			for _, tp := range got {
				if _, ok := g.offsets[tp]; ok {
					t.Fatalf("%v still committed", tp)
				}
			}
		})
	}
}
