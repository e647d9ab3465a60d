package controller

import "testing"

// TestOnChangePanicIsContained is the regression test for issue 11 item 6
// on the metadata publisher: a panic in OnChange (local logs, replicas,
// coordinators) stopped the process. It is logged, the image is published
// anyway and later changes are delivered.
func TestOnChangePanicIsContained(t *testing.T) {
	calls := 0
	c := newTestController(t, 1, func(o *Options) {
		o.OnChange = func(prev, next *Image) {
			calls++
			if next.Topics["boom"] != nil && prev.Topics["boom"] == nil {
				panic("test: bug applying a change")
			}
		}
	})
	before := calls
	if _, rerr := c.CreateTopicsRequest([]CreateTopic{{Name: "boom", NumPartitions: 1, ReplicationFactor: 1}}, false); rerr != nil {
		t.Fatal(rerr)
	}
	if c.Image().Topics["boom"] == nil {
		t.Fatal("image with the topic not published after the panic")
	}
	if _, rerr := c.CreateTopicsRequest([]CreateTopic{{Name: "after", NumPartitions: 1, ReplicationFactor: 1}}, false); rerr != nil {
		t.Fatal(rerr)
	}
	if c.Image().Topics["after"] == nil || calls != before+2 {
		t.Fatalf("later change: published %v, OnChange calls %d (want %d)", c.Image().Topics["after"] != nil, calls, before+2)
	}
}
