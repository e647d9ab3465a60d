package controller

import (
	"testing"
	"time"
)

// TestHeartbeatReportsSkipWriteLock: a heartbeat's report of unchanged
// cordoned and offline log directories does not wait for writeMu, which
// every metadata write holds until its records commit. Every broker
// heartbeat made this report and so queued behind each CreateTopics,
// DeleteTopics and AlterPartition; under load (system tests at load
// 20-100 with a 4 s session) heartbeats took over their 1 s timeout and
// the controller fenced live brokers. Here writeMu is held as by a write
// waiting for its commit: the reports that change nothing must answer
// anyway, and one that changes something waits.
func TestHeartbeatReportsSkipWriteLock(t *testing.T) {
	c, id, sid := newJBODTopic(t)
	assignJBOD(t, c, id, sid)
	epoch := c.Image().Brokers[1].Epoch
	if code, err := c.ReportOfflineLogDirs(1, epoch, []Uuid{dirA}); code != 0 || err != nil {
		t.Fatalf("ReportOfflineLogDirs = %d, %v", code, err)
	}
	c.writeMu.Lock()
	held := true
	defer func() {
		if held {
			c.writeMu.Unlock()
		}
	}()
	done := make(chan string, 3)
	go func() {
		code, err := c.ReportCordonedLogDirs(2, c.Image().Brokers[2].Epoch, []Uuid{})
		done <- "cordoned " + errText(code, err)
	}()
	go func() {
		code, err := c.ReportOfflineLogDirs(1, epoch, []Uuid{dirA})
		done <- "offline " + errText(code, err)
	}()
	for range 2 {
		select {
		case r := <-done:
			if r != "cordoned ok" && r != "offline ok" {
				t.Fatalf("unchanged report: %s", r)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a report that changes nothing waited for the write lock")
		}
	}
	// A change still takes the lock.
	changed := make(chan struct{})
	go func() {
		c.ReportCordonedLogDirs(2, c.Image().Brokers[2].Epoch, []Uuid{dirB})
		close(changed)
	}()
	select {
	case <-changed:
		t.Fatal("a report that changes the directories did not wait for the write lock")
	case <-time.After(100 * time.Millisecond):
	}
	held = false
	c.writeMu.Unlock()
	<-changed
}

func errText(code int16, err error) string {
	if code != 0 || err != nil {
		return "failed"
	}
	return "ok"
}
