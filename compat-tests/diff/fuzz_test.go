package diff

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// fuzzHeading opens the list of explained differences of the fuzz run in
// FINDINGS.md (the scripted suite's list applies too).
const fuzzHeading = "## Differential fuzzing: explained differences"

// TestDiffFuzz sends the seeded random requests of FuzzScript to a fresh
// Kafka 4.4 and a fresh samsa and fails on a difference FINDINGS.md does
// not explain. DIFF_FUZZ_SEED (default 1) and DIFF_FUZZ_STEPS (default
// 400) choose the run; DIFF_FUZZ_REPORT writes the differences grouped by
// API, field and values, then every one; DIFF_DUMP adds both answers of
// the steps whose name contains it. Unlike the scripted suite, an
// explained pattern no run of this seed matches is not an error (other
// seeds meet other differences).
func TestDiffFuzz(t *testing.T) {
	seed, steps := uint64(1), 400
	if v := os.Getenv("DIFF_FUZZ_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("DIFF_FUZZ_SEED: %v", err)
		}
		seed = n
	}
	if v := os.Getenv("DIFF_FUZZ_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("DIFF_FUZZ_STEPS: %v", err)
		}
		steps = n
	}
	if steps == 0 {
		t.Skip("DIFF_FUZZ_STEPS=0")
	}
	findings := filepath.Join("..", "FINDINGS.md")
	explained, err := ReadExplainedSection(findings, fuzzHeading)
	if err != nil {
		t.Fatal(err)
	}
	scripted, err := ReadExplained(findings)
	if err != nil {
		t.Fatal(err)
	}
	explained = append(explained, scripted...)
	kafkaAddr, samsaAddr := os.Getenv("DIFF_FUZZ_KAFKA_ADDR"), os.Getenv("DIFF_FUZZ_SAMSA_ADDR")
	start := time.Now()
	if kafkaAddr == "" {
		kafkaAddr = kafkaref.Start(t, kafkaref.Options{}).Bootstrap()
	}
	if samsaAddr == "" {
		samsaAddr = harness.Start(t, harness.Options{Overrides: samsaOverrides, ControllerListener: true}).Addr
	}
	up := time.Now()
	baseTS := time.Now().Truncate(time.Second).UnixMilli()
	sessions := map[string]*Session{}
	var ranges []map[int16]Versions
	for name, addr := range map[string]string{"kafka": kafkaAddr, "samsa": samsaAddr} {
		s, err := NewSession(name, addr, baseTS)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sessions[name] = s
		r, err := advertisedBy(s)
		if err != nil {
			t.Fatal(err)
		}
		ranges = append(ranges, r)
	}
	vers := commonVersions(ranges[0], ranges[1])
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := map[string]error{}
	for name, s := range sessions {
		wg.Go(func() {
			err := FuzzScript(s, seed, steps, vers)
			mu.Lock()
			errs[name] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	for name, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	t.Logf("seed %d, %d steps: brokers up in %v, run %v", seed, steps, up.Sub(start).Round(time.Second), time.Since(up).Round(time.Second))
	for _, name := range []string{"kafka", "samsa"} {
		t.Logf("%s: slowest steps %s", name, slowest(sessions[name].Steps, 5))
	}
	for _, s := range sessions {
		for _, st := range s.Steps {
			if st.Resp != nil {
				sortLists(reflect.ValueOf(st.Resp))
			}
		}
	}
	pairs, unmatched := Pairs(sessions["kafka"].Steps, sessions["samsa"].Steps)
	sum := Summarize(pairs, explained)
	grouped := GroupDiffs(pairs, explained)
	t.Logf("differential fuzzing against Kafka 4.4 (seed %d):\n%s\n%s", seed, sum.Format(), grouped)
	if p := os.Getenv("DIFF_FUZZ_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte(sum.Format()+"\n"+grouped+detail(pairs)+dump(pairs, os.Getenv("DIFF_DUMP"))), 0o644); err != nil {
			t.Error(err)
		}
	}
	for _, u := range unmatched {
		t.Errorf("%v: %s", ErrDiffScript, u)
	}
	if n := len(sum.Unexplained); n > 0 {
		t.Errorf("%d differences from Kafka 4.4 that compat-tests/FINDINGS.md does not explain (grouped above; rerun with DIFF_FUZZ_SEED=%d DIFF_FUZZ_STEPS=%d)", n, seed, steps)
	}
}

// advertisedBy asks the broker of s for its API version ranges.
func advertisedBy(s *Session) (map[int16]Versions, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "diff", "1.0"
	resp, err := s.Quiet(3, req)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	if r.ErrorCode != 0 {
		return nil, fmt.Errorf("%w: %s: ApiVersions error %d", ErrDiffBadResponse, s.Broker, r.ErrorCode)
	}
	out := map[int16]Versions{}
	for _, k := range r.ApiKeys {
		out[k.ApiKey] = Versions{k.MinVersion, k.MaxVersion}
	}
	return out, nil
}

// commonVersions is the range of each API both a and b advertise, limited
// to what kmsg can encode.
func commonVersions(a, b map[int16]Versions) map[int16]Versions {
	out := map[int16]Versions{}
	for k, ra := range a {
		rb, ok := b[k]
		if !ok {
			continue
		}
		r := Versions{max(ra.Min, rb.Min), min(ra.Max, rb.Max)}
		if req := kmsg.RequestForKey(k); req != nil {
			r.Max = min(r.Max, req.MaxVersion())
		}
		if r.Min <= r.Max {
			out[k] = r
		}
	}
	return out
}

// GroupDiffs renders the differences of a run grouped by API, field and
// the two values (versions and step names starred), most frequent first,
// each with its first step and whether FINDINGS.md explains it.
func GroupDiffs(pairs []Pair, explained []*Explained) string {
	type group struct {
		n         int
		first     string
		explained bool
	}
	groups := map[string]*group{}
	for _, p := range pairs {
		api := strings.SplitN(p.Name, " ", 2)[0]
		for _, d := range p.Diffs {
			key := fmt.Sprintf("%s %s: Kafka %s, samsa %s", api, d.Key(), clip(d.Kafka), clip(d.Samsa))
			g := groups[key]
			if g == nil {
				g = &group{first: p.Name}
				id := p.ID(d)
				for _, e := range explained {
					if globMatch(e.Pattern, id) {
						g.explained = true
						break
					}
				}
				groups[key] = g
			}
			g.n++
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if groups[keys[i]].n != groups[keys[j]].n {
			return groups[keys[i]].n > groups[keys[j]].n
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	b.WriteString("differences grouped by API, field and values:\n")
	for _, k := range keys {
		g := groups[k]
		mark := "UNEXPLAINED"
		if g.explained {
			mark = "explained"
		}
		fmt.Fprintf(&b, "  %4d  %s  [%s; first: %s]\n", g.n, k, mark, g.first)
	}
	return b.String()
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
