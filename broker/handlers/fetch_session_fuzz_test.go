package handlers

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzFetchSessions drives a small session cache with arbitrary sequences
// of Fetch session requests (ids, epochs, versions, added and forgotten
// partitions) and checks its invariants after each: never a panic, at most
// max sessions, each session's order and partition map hold the same
// partitions once each, and the next expected epoch is in 1..2^31-1.
func FuzzFetchSessions(f *testing.F) {
	f.Add([]byte{0, 0, 13, 3, 1, 2, 1, 1, 13, 0, 0, 1, 2, 13, 1, 1})
	f.Add([]byte{0, 0, 12, 2, 0, 1, 1, 1, 13, 0, 0, 0, 0, 0xff, 7, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newFetchSessionCache(3)
		now := time.Unix(1000, 0)
		var ids []int32
		next := func() byte {
			if len(data) == 0 {
				return 0
			}
			b := data[0]
			data = data[1:]
			return b
		}
		for steps := 0; len(data) > 0 && steps < 200; steps++ {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID = -1
			sel := next()
			switch {
			case sel == 0 || len(ids) == 0:
				req.SessionID = 0
			case sel == 0xff:
				req.SessionID = int32(next())
			default:
				req.SessionID = ids[int(sel)%len(ids)]
			}
			req.SessionEpoch = int32(int8(next()))
			v := int16(4 + next()%15)
			for n := next() % 4; n > 0; n-- {
				rt := kmsg.NewFetchRequestTopic()
				b := next()
				rt.Topic, rt.TopicID = string(rune('a'+b%3)), [16]byte{b % 3}
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition = int32(next() % 3)
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
			}
			for n := next() % 3; n > 0; n-- {
				ft := kmsg.NewFetchRequestForgottenTopic()
				b := next()
				ft.Topic, ft.TopicID = string(rune('a'+b%3)), [16]byte{b % 3}
				ft.Partitions = []int32{int32(next() % 3)}
				req.ForgottenTopics = append(req.ForgottenTopics, ft)
			}
			now = now.Add(time.Duration(next()) * time.Second)
			fc, code := c.newFetchContext(req, v, now)
			if code != 0 {
				if fc != nil {
					t.Fatalf("error %d with a context", code)
				}
				continue
			}
			if s := fc.sess; s != nil {
				if len(s.order) != len(s.parts) {
					t.Fatalf("order %d, parts %d", len(s.order), len(s.parts))
				}
				seen := map[sessionKey]bool{}
				for _, k := range s.order {
					if seen[k] || s.parts[k] == nil {
						t.Fatalf("order %v does not match parts", s.order)
					}
					seen[k] = true
				}
				if s.nextEpoch < 1 {
					t.Fatalf("next epoch %d", s.nextEpoch)
				}
				ids = append(ids, s.id)
				// A partition that returned records moves to the end.
				if len(fc.wants) > 0 {
					fc.respond(fc.wants[0], &fetchResult{records: []byte{1}})
				}
			}
			fc.done()
			if n := c.len(); n > 3 {
				t.Fatalf("%d sessions in a cache of 3", n)
			}
		}
	})
}
