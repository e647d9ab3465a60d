package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The TCP-level fuzz target of issue 11: structured random and mutated
// requests of every API key and version the broker serves, sent over real
// sockets to an in-process node; afterwards a normal client must still
// produce and consume, and goroutines and memory must return to their
// baseline. TestTCPFuzzShort is a seeded, deterministic run that is part of
// `go test`; FuzzTCPRequests runs as long as wanted with `go test -fuzz`.

// fuzzOverrides keep the node small, so the run spends its time on requests.
var fuzzOverrides = []string{"offsets.topic.num.partitions=1", "transaction.state.log.num.partitions=1",
	"share.coordinator.state.topic.num.partitions=1",
	"group.initial.rebalance.delay.ms=0", "connections.max.idle.ms=30000"}

// requestFuzzer makes random requests from a node's handler table.
type requestFuzzer struct {
	rng  *rand.Rand
	keys []int16
	min  map[int16]int16
	max  map[int16]int16
}

func newRequestFuzzer(n *Node, seed uint64) *requestFuzzer {
	f := &requestFuzzer{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), min: map[int16]int16{}, max: map[int16]int16{}}
	for k, e := range n.srv.table {
		f.keys = append(f.keys, k)
		f.min[k], f.max[k] = e.MinVersion, e.MaxVersion
	}
	slices.Sort(f.keys)
	return f
}

// frame returns one request frame (size prefix included): a random request
// of a served key at a served version, or a few versions around them,
// then, half of the time, mutated bytes.
func (f *requestFuzzer) frame() []byte {
	r := f.rng
	key := f.keys[r.IntN(len(f.keys))]
	v := f.min[key] + int16(r.IntN(int(f.max[key]-f.min[key])+1))
	if r.IntN(20) == 0 {
		v = f.max[key] + 1 + int16(r.IntN(3)) // unsupported versions too
	}
	req := kmsg.RequestForKey(key)
	f.fill(reflect.ValueOf(req).Elem(), 0)
	req.SetVersion(v)
	out := f.encode(req, v)
	if out == nil || r.IntN(2) == 0 {
		return out
	}
	return f.mutate(out)
}

// encode runs the client encoder, which can itself panic on values the
// version cannot carry (a nil non-nullable string): those are skipped.
func (f *requestFuzzer) encode(req kmsg.Request, v int16) (out []byte) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	return fmtr.AppendRequest(nil, req, f.rng.Int32())
}

func (f *requestFuzzer) mutate(b []byte) []byte {
	r := f.rng
	b = slices.Clone(b)
	for range 1 + r.IntN(4) {
		switch op := r.IntN(6); {
		case op < 3 && len(b) > 4: // flip bytes of the body
			b[4+r.IntN(len(b)-4)] ^= byte(1 + r.IntN(255))
		case op == 3 && len(b) > 8: // an interesting int32 somewhere
			at := 4 + r.IntN(len(b)-7)
			binary.BigEndian.PutUint32(b[at:], []uint32{0, 0xffffffff, 0x7fffffff, 0x80000000, 1e6 + 1}[r.IntN(5)])
		case op == 4 && len(b) > 5: // truncate, keeping the size prefix
			b = b[:4+r.IntN(len(b)-4)]
		default: // append garbage
			for range r.IntN(16) {
				b = append(b, byte(r.Uint32()))
			}
		}
	}
	if r.IntN(4) != 0 { // usually keep the prefix consistent with the body
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	}
	return b
}

// fill sets every exported field of v to a random value. Durations are kept
// short (a long poll or rebalance timeout would only make the run wait),
// counts mostly small, with Kafka's boundary values mixed in.
func (f *requestFuzzer) fill(v reflect.Value, depth int) {
	r := f.rng
	t := v.Type()
	for i := range v.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Name == "Version" || sf.Type.Name() == "Tags" {
			continue
		}
		fv := v.Field(i)
		name := strings.ToLower(sf.Name)
		timed := strings.Contains(name, "timeout") || strings.Contains(name, "wait") || strings.Contains(name, "millis") || strings.HasSuffix(name, "ms")
		f.value(fv, depth, timed)
	}
	_ = r
}

func (f *requestFuzzer) value(v reflect.Value, depth int, timed bool) {
	r := f.rng
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if timed {
			v.SetInt(int64(r.IntN(50)))
			return
		}
		var n int64
		switch r.IntN(10) {
		case 0:
			n = []int64{0, -1, -2, math.MaxInt32, math.MinInt32, math.MaxInt16, math.MinInt16, math.MaxInt64, math.MinInt64}[r.IntN(9)]
		case 1:
			n = int64(r.Uint64())
		default:
			n = int64(r.IntN(12)) - 2
		}
		if v.OverflowInt(n) {
			n = int64(r.IntN(12)) - 2
		}
		v.SetInt(n)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(r.IntN(256)))
	case reflect.Float64:
		v.SetFloat([]float64{0, -1, 1.5, math.Inf(1), math.NaN()}[r.IntN(5)])
	case reflect.String:
		v.SetString(f.str())
	case reflect.Pointer:
		if r.IntN(3) == 0 {
			return // nil
		}
		p := reflect.New(v.Type().Elem())
		f.value(p.Elem(), depth, timed)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			if r.IntN(4) == 0 {
				return
			}
			b := make([]byte, r.IntN(64))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			v.SetBytes(b)
			return
		}
		if depth > 3 {
			return
		}
		n := r.IntN(4)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			f.value(s.Index(i), depth+1, timed)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			f.value(v.Index(i), depth, timed)
		}
	case reflect.Struct:
		if depth > 4 {
			return
		}
		f.fill(v, depth+1)
	}
}

// str is a short string: names the broker knows (so requests reach deep
// into handlers), random text, or empty.
func (f *requestFuzzer) str() string {
	r := f.rng
	switch r.IntN(6) {
	case 0:
		return ""
	case 1, 2:
		return []string{"fz", "fz2", "__consumer_offsets", "__transaction_state", "g", "txn", "range", "consumer", "cleanup.policy", "compact", "retention.ms"}[r.IntN(11)]
	default:
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = "abcxyz._-09"[r.IntN(11)]
		}
		return string(b)
	}
}

// sendOne sends frame on a new connection, half-closes it and reads until
// the broker closes: every request ends with the broker closing (after its
// answer, or at once for a bad one). A broker that neither answers nor
// closes within a minute is a hang and fails the run.
func sendOne(addr string, frame []byte) (answered bool, err error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return false, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	if _, err := nc.Write(frame); err != nil {
		return false, nil // the broker may close before reading it all
	}
	nc.(*net.TCPConn).CloseWrite()
	got, err := io.Copy(io.Discard, nc)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false, fmt.Errorf("no answer and no close within a minute (frame % x)", frame[:min(len(frame), 32)])
	}
	return got > 0, nil
}

// fuzzRequests sends count requests from seed, over workers connections
// at a time.
func fuzzRequests(t testing.TB, n *Node, seed uint64, count, workers int) {
	addr := n.Addrs()[0].String()
	frames := make(chan []byte)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	sent, answered := 0, 0
	for range workers {
		wg.Go(func() {
			for fr := range frames {
				ok, err := sendOne(addr, fr)
				mu.Lock()
				if err != nil {
					failures = append(failures, err.Error())
				}
				if ok {
					answered++
				}
				mu.Unlock()
			}
		})
	}
	f := newRequestFuzzer(n, seed)
	for range count {
		if fr := f.frame(); fr != nil {
			sent++
			frames <- fr
		}
	}
	close(frames)
	wg.Wait()
	t.Logf("%d requests generated, %d sent, %d answered", count, sent, answered)
	if len(failures) > 0 {
		t.Fatalf("%d failures, first: %s", len(failures), failures[0])
	}
	if p := n.srv.PanicCount(); p > 0 {
		t.Fatalf("%d requests panicked in handlers (see the log)", p)
	}
}

// checkClientWorks produces to and consumes from a new topic with franz-go.
func checkClientWorks(t testing.TB, n *Node, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addrs()[0].String()), kgo.DefaultProduceTopic(topic),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce after fuzzing: %v", err)
		}
	}
	for got := 0; got < 10; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of 10 records after fuzzing", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("consume after fuzzing: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != fmt.Sprintf("v%d", got) {
				t.Fatalf("record %d is %q", got, r.Value)
			}
			got++
		})
	}
}

// waitBaseline polls until goroutines are back near the baseline and checks
// the heap: both must return after every connection has closed.
func waitBaseline(t testing.TB, n *Node, goroutines int, heap uint64) {
	deadline := time.Now().Add(60 * time.Second)
	for n.srv.ConnectionCount() > 0 || runtime.NumGoroutine() > goroutines+20 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections and %d goroutines remain (baseline %d)", n.srv.ConnectionCount(), runtime.NumGoroutine(), goroutines)
		}
		runtime.Gosched()
	}
	if used := n.srv.budget.used(); used != 0 {
		t.Fatalf("queued.max.request.bytes budget holds %d bytes with no connection", used)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc > heap+128<<20 {
		t.Fatalf("heap %d bytes after fuzzing, baseline %d", ms.HeapAlloc, heap)
	}
}

func baseline() (int, uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc
}

// TestTCPFuzzShort is the short, deterministic run of the TCP fuzz target.
func TestTCPFuzzShort(t *testing.T) {
	count := 3000
	if testing.Short() {
		count = 500
	}
	withFuzzNode(t, fuzzOverrides, "after-fuzz", func(n *Node) {
		fuzzRequests(t, n, 11, count, 8)
	})
}

// FuzzTCPRequests: go test -run '^$' -fuzz FuzzTCPRequests ./broker/
// Each input seeds a batch of random and mutated requests against one node.
func FuzzTCPRequests(f *testing.F) {
	addFuzzSeeds(f, "", "a", "seed-2", "samsa")
	withFuzzNode(f, fuzzOverrides, "after-fuzz", func(n *Node) {
		f.Fuzz(func(t *testing.T, data []byte) {
			fuzzRequests(t, n, fuzzSeed(data), 50, 4)
		})
	})
}

// withFuzzNode starts one test node with overrides, notes the process's
// goroutine and heap baseline, hands the node to fuzz, and then requires
// that a client still produces and consumes (on topic probe) and that the
// node comes back to its baseline: what every fuzz run against a node
// checks once its requests are done.
func withFuzzNode(t testing.TB, overrides []string, probe string, fuzz func(n *Node)) {
	t.Helper()
	n := startTestNode(t, t.TempDir(), overrides...)
	defer closeTestNode(t, n)
	g, heap := baseline()
	fuzz(n)
	checkClientWorks(t, n, probe)
	waitBaseline(t, n, g, heap)
}

// addFuzzSeeds adds each seed to f's corpus.
func addFuzzSeeds(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
}

// fuzzSeed is the random seed a fuzz input stands for.
func fuzzSeed(data []byte) uint64 {
	h := fnv.New64a()
	h.Write(data)
	return h.Sum64()
}
