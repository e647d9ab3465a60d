package txn

import (
	"fmt"
	"maps"
	"testing"
	"time"
)

// TestWriteFaults runs one scenario over and over, failing the Nth append
// to __transaction_state on run N, until a run sees no failure. After
// every run the state in memory must be exactly what the log holds: a
// failed write never shows in memory, a successful one always does.
func TestWriteFaults(t *testing.T) {
	testWriteFaults(t, func(l *memLog) Log { return l })
}

// testWriteFaults is TestWriteFaults over the Log wrap makes of the env's
// memory log.
func testWriteFaults(t *testing.T, wrap func(*memLog) Log) {
	for n := 1; ; n++ {
		e := newEnv(t, func(o *Options) { o.NumPartitions = 1 })
		e.c.Close()
		log := e.logs[0]
		wrapped := wrap(log)
		e.opts.Log = func(int32) (Log, bool) { return wrapped, true }
		e.start()
		log.mu.Lock()
		log.failAt = n
		log.mu.Unlock()
		scenario(e)
		log.mu.Lock()
		injected := log.failAt == 0
		log.mu.Unlock()
		// Let retries of a failed Complete write finish or not; both
		// must leave memory equal to the log.
		e.clock.Advance(time.Second)
		e.tick()
		// Memory and log are compared on the shard goroutine, the only
		// writer, so that no write lands between the two reads, and
		// with no write in flight (pipelined: appended, not installed
		// yet).
		var mem map[string]*txnMeta
		var data []byte
		var err error
		s := e.c.shardList()[0]
		e.whenSettled(s, func() {
			mem = maps.Clone(s.txns)
			data, err = log.Read(0, 1<<30, log.LogEndOffset(), true)
		})
		if err != nil {
			t.Fatal(err)
		}
		ls := &loadState{txns: map[string]*txnMeta{}}
		if _, err := ls.applyBatches(data, 0); err != nil {
			t.Fatal(err)
		}
		if got, want := describeAll(mem), describeAll(ls.txns); got != want {
			t.Fatalf("fault at append %d: memory\n%s\nlog\n%s", n, got, want)
		}
		e.c.Close()
		if !injected {
			if n < 10 {
				t.Fatalf("the scenario made only %d appends", n-1)
			}
			return
		}
	}
}

// scenario drives a few producers through every kind of write, ignoring
// the answers.
func scenario(e *env) {
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		r := e.initReq(4, id, 5000, -1, -1)
		e.add(3, id, r.ProducerID, r.ProducerEpoch, tp("t", 0), tp("t", 1))
		e.addOffsets(3, id, r.ProducerID, r.ProducerEpoch, tp("__consumer_offsets", 1))
	}
	for i, id := range ids {
		m, _ := e.meta(id)
		if m == nil {
			continue
		}
		switch i {
		case 0:
			e.end(3, id, m.producerID, m.epoch, true)
		case 1:
			e.initReq(4, id, 5000, -1, -1) // fences the open transaction
		}
	}
	e.clock.Advance(10 * time.Second) // c times out
	e.tick()
}

func describeAll(txns map[string]*txnMeta) string {
	var out string
	for _, id := range []string{"a", "b", "c"} {
		m := txns[id]
		if m == nil {
			out += id + ": none\n"
			continue
		}
		out += fmt.Sprintf("%s: %v pid=%d epoch=%d timeout=%d parts=%v start=%d update=%d prev=%d\n",
			id, m.state, m.producerID, m.epoch, m.timeoutMs, m.sortedPartitions(), m.startMs, m.updateMs, m.prevProducerID)
	}
	return out
}
