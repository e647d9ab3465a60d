package compattests

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/compat-tests/harness"
	"github.com/samsa-broker/samsa/compat-tests/kafkaref"
)

// scramProbe sends the same AlterUserScramCredentials and
// DescribeUserScramCredentials requests (successes and each error case) to
// a broker and returns "case: code message" lines.
func scramProbe(t *testing.T, addr string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	up := func(name string, mech int8, iters int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations = name, mech, iters
		u.Salt, u.SaltedPassword = []byte("salt-salt"), make([]byte, 32+32*int(mech-1))
		for i := range u.SaltedPassword {
			u.SaltedPassword[i] = byte(i)
		}
		return u
	}
	del := func(name string, mech int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
		d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		d.Name, d.Mechanism = name, mech
		return d
	}
	alter := func(label string, dels []kmsg.AlterUserSCRAMCredentialsRequestDeletion, ups []kmsg.AlterUserSCRAMCredentialsRequestUpsertion) {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		req.Deletions, req.Upsertions = dels, ups
		var resp *kmsg.AlterUserSCRAMCredentialsResponse
		// The first request may meet a controller that is still starting.
		for attempt := 0; ; attempt++ {
			resp, err = req.RequestWith(ctx, cl)
			if err == nil || attempt == 20 {
				break
			}
			time.Sleep(250 * time.Millisecond) // retry pacing, not a condition wait
		}
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		var lines []string
		for _, r := range resp.Results {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			lines = append(lines, fmt.Sprintf("%s %s: %d %s", label, r.User, r.ErrorCode, msg))
		}
		sort.Strings(lines)
		out = append(out, lines...)
	}
	alter("create", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("alice", 1, 4096), up("alice", 2, 8192), up("bob", 2, 4096)})
	alter("few-iterations", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("carol", 2, 100)})
	alter("many-iterations", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("carol", 2, 100000)})
	alter("unknown-mechanism", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("carol", 9, 4096)})
	alter("empty-user", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("", 2, 4096)})
	alter("twice", nil, []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{up("dave", 2, 4096), up("dave", 2, 4096)})
	alter("delete-missing", []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("erin", 2)}, nil)
	alter("delete", []kmsg.AlterUserSCRAMCredentialsRequestDeletion{del("bob", 2)}, nil)
	describe := func(label string, users ...string) {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		for _, u := range users {
			n := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
			n.Name = u
			req.Users = append(req.Users, n)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		var lines []string
		for _, r := range resp.Results {
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			var infos []string
			for _, c := range r.CredentialInfos {
				infos = append(infos, fmt.Sprintf("%d/%d", c.Mechanism, c.Iterations))
			}
			sort.Strings(infos)
			lines = append(lines, fmt.Sprintf("%s %s: %d %s [%s]", label, r.User, r.ErrorCode, msg, strings.Join(infos, " ")))
		}
		sort.Strings(lines)
		out = append(out, fmt.Sprintf("%s top: %d", label, resp.ErrorCode))
		out = append(out, lines...)
	}
	// Kafka answers AlterUserScramCredentials once the controller has
	// committed the change; its brokers apply it to the credentials they
	// describe a little later (seen under load: bob described after his
	// deletion). Wait until the deletion is visible before describing.
	deleted := func() bool {
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		n := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		n.Name = "bob"
		req.Users = append(req.Users, n)
		resp, err := req.RequestWith(ctx, cl)
		return err == nil && len(resp.Results) == 1 && resp.Results[0].ErrorCode != 0
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !deleted() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: bob's deletion never became visible to DescribeUserScramCredentials", addr)
		case <-tick.C:
		}
	}
	describe("describe-all")
	describe("describe-some", "alice", "bob", "nobody", "alice")
	return out
}

// TestScramAdminDifferential sends the same SCRAM credential requests to
// samsa and to Apache Kafka 4.4 and compares every error code and message.
func TestScramAdminDifferential(t *testing.T) {
	t.Parallel()
	kafkaref.Require(t)
	var samsa, kafka []string
	var wg sync.WaitGroup
	wg.Go(func() { samsa = scramProbe(t, harness.Start(t, harness.Options{}).Addr) })
	wg.Go(func() { kafka = scramProbe(t, kafkaref.Start(t, kafkaref.Options{}).Bootstrap()) })
	wg.Wait()
	if !reflect.DeepEqual(samsa, kafka) {
		t.Errorf("samsa and Kafka differ:\nsamsa:\n  %s\nkafka:\n  %s", strings.Join(samsa, "\n  "), strings.Join(kafka, "\n  "))
	}
}
