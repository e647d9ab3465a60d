package diff

import (
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// quotaEntity builds a request entity from type/name pairs; a name "" is
// the default entity (null on the wire).
func quotaEntity(pairs ...string) []kmsg.AlterClientQuotasRequestEntryEntity {
	var out []kmsg.AlterClientQuotasRequestEntryEntity
	for i := 0; i+1 < len(pairs); i += 2 {
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		e.Type = pairs[i]
		if pairs[i+1] != "" {
			name := pairs[i+1]
			e.Name = &name
		}
		out = append(out, e)
	}
	return out
}

func quotaEntry(entity []kmsg.AlterClientQuotasRequestEntryEntity, kv ...any) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	e.Entity = entity
	for i := 0; i+1 < len(kv); i += 2 {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key = kv[i].(string)
		if v, ok := kv[i+1].(float64); ok {
			op.Value = v
		} else {
			op.Remove = true
		}
		e.Ops = append(e.Ops, op)
	}
	return e
}

// quotaFilter builds a DescribeClientQuotas component: match "" with
// matchType 0 sends a null match (invalid for EXACT).
func quotaFilter(typ string, matchType int8, match string) kmsg.DescribeClientQuotasRequestComponent {
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType = typ, kmsg.QuotasMatchType(matchType)
	if match != "" {
		c.Match = &match
	}
	return c
}

// waitQuotas polls (unrecorded) until an unfiltered describe lists n
// entities, at most 10 s: Kafka answers AlterClientQuotas once its
// controller committed, and its broker applies the change a moment later.
func waitQuotas(s *Session, n int) {
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ; time.Now().Before(deadline); <-tick.C {
		resp, err := s.Quiet(0, kmsg.NewPtrDescribeClientQuotasRequest())
		if err != nil {
			return
		}
		if len(resp.(*kmsg.DescribeClientQuotasResponse).Entries) == n {
			return
		}
	}
}

// scriptQuotas covers DescribeClientQuotas and AlterClientQuotas: valid
// and invalid alterations (validate_only first), describe filters of
// every match type and the invalid ones, and removal.
func scriptQuotas(s *Session) error {
	describe := func(name string, strict bool, comps ...kmsg.DescribeClientQuotasRequestComponent) {
		each(kmsg.DescribeClientQuotas, func(v int16) {
			req := kmsg.NewPtrDescribeClientQuotasRequest()
			req.Components, req.Strict = comps, strict
			s.Do(name, v, req)
		})
	}
	describe("none", false)
	valid := []kmsg.AlterClientQuotasRequestEntry{
		quotaEntry(quotaEntity("user", "diff-q-alice"), "producer_byte_rate", 1024.0, "consumer_byte_rate", 2048.0),
		quotaEntry(quotaEntity("client-id", ""), "request_percentage", 12.5),
		quotaEntry(quotaEntity("user", "", "client-id", "diff-q-app"), "controller_mutation_rate", 3.0),
		quotaEntry(quotaEntity("ip", "127.0.0.1"), "connection_creation_rate", 10.0),
	}
	each(kmsg.AlterClientQuotas, func(v int16) {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Entries, req.ValidateOnly = valid, true
		s.Do("validate-only", v, req)
	})
	describe("after-validate-only", false)
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = valid
	s.Do("set", clamp(kmsg.AlterClientQuotas, 1), req)
	each(kmsg.AlterClientQuotas, func(v int16) {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.Entries = []kmsg.AlterClientQuotasRequestEntry{
			quotaEntry(quotaEntity("user", "diff-q-frac"), "producer_byte_rate", 1.5),
			quotaEntry(quotaEntity("user", "diff-q-key"), "retention.ms", 1.0),
			quotaEntry(quotaEntity("user", "diff-q-zero"), "consumer_byte_rate", 0.0),
			quotaEntry(quotaEntity("user", "diff-q-neg"), "request_percentage", -1.0),
			quotaEntry(quotaEntity("client-id", "diff-q-ip-key"), "connection_creation_rate", 1.0),
			quotaEntry(quotaEntity("ip", "10.1.2.3"), "producer_byte_rate", 1.0),
			quotaEntry(quotaEntity("ip", "10.1.2.4", "user", "diff-q-u"), "connection_creation_rate", 1.0),
			quotaEntry(quotaEntity("group", "diff-q-g"), "producer_byte_rate", 1.0),
			quotaEntry(quotaEntity("user", "diff-q-dupkey"), "producer_byte_rate", 1.0, "producer_byte_rate", 2.0),
		}
		s.Do("invalid", v, req)
	})
	waitQuotas(s, len(valid))
	describe("all", false)
	describe("strict-none", true)
	describe("user-exact", false, quotaFilter("user", 0, "diff-q-alice"))
	describe("user-exact-strict", true, quotaFilter("user", 0, "diff-q-alice"))
	describe("user-default", false, quotaFilter("user", 1, ""))
	describe("client-default-strict", true, quotaFilter("client-id", 1, ""))
	describe("user-specified", false, quotaFilter("user", 2, ""))
	describe("client-specified-strict", true, quotaFilter("client-id", 2, ""))
	describe("user-and-client", false, quotaFilter("user", 1, ""), quotaFilter("client-id", 0, "diff-q-app"))
	describe("ip-specified", false, quotaFilter("ip", 2, ""))
	describe("ip-with-user", false, quotaFilter("ip", 2, ""), quotaFilter("user", 2, ""))
	describe("type-twice", false, quotaFilter("user", 2, ""), quotaFilter("user", 1, ""))
	describe("exact-null", false, quotaFilter("user", 0, ""))
	describe("default-with-match", false, quotaFilter("user", 1, "x"))
	describe("unknown-type", false, quotaFilter("group", 2, ""))
	describe("empty-type", false, quotaFilter("", 2, ""))
	rm := kmsg.NewPtrAlterClientQuotasRequest()
	rm.Entries = []kmsg.AlterClientQuotasRequestEntry{
		quotaEntry(quotaEntity("user", "diff-q-alice"), "producer_byte_rate", nil, "consumer_byte_rate", nil),
		quotaEntry(quotaEntity("client-id", ""), "request_percentage", nil),
		quotaEntry(quotaEntity("user", "", "client-id", "diff-q-app"), "controller_mutation_rate", nil),
		quotaEntry(quotaEntity("ip", "127.0.0.1"), "connection_creation_rate", nil),
		quotaEntry(quotaEntity("user", "diff-q-never"), "producer_byte_rate", nil),
	}
	s.Do("remove", clamp(kmsg.AlterClientQuotas, 0), rm)
	waitQuotas(s, 0)
	describe("after-remove", false)
	return nil
}

// normalizeQuotas sorts what both brokers list in hash order: the
// entries of a quota response by entity, each entity's parts by type and
// each entry's values by key.
func normalizeQuotas(resp kmsg.Response) {
	name := func(typ string, n *string) string {
		if n == nil {
			return typ + "=<default>"
		}
		return typ + "=" + *n
	}
	switch r := resp.(type) {
	case *kmsg.DescribeClientQuotasResponse:
		key := func(e kmsg.DescribeClientQuotasResponseEntry) string {
			var parts []string
			for _, p := range e.Entity {
				parts = append(parts, name(p.Type, p.Name))
			}
			slices.Sort(parts)
			return strings.Join(parts, ",")
		}
		for i := range r.Entries {
			e := &r.Entries[i]
			slices.SortFunc(e.Entity, func(a, b kmsg.DescribeClientQuotasResponseEntryEntity) int { return strings.Compare(a.Type, b.Type) })
			slices.SortFunc(e.Values, func(a, b kmsg.DescribeClientQuotasResponseEntryValue) int { return strings.Compare(a.Key, b.Key) })
		}
		slices.SortStableFunc(r.Entries, func(a, b kmsg.DescribeClientQuotasResponseEntry) int { return strings.Compare(key(a), key(b)) })
	case *kmsg.AlterClientQuotasResponse:
		key := func(e kmsg.AlterClientQuotasResponseEntry) string {
			var parts []string
			for _, p := range e.Entity {
				parts = append(parts, name(p.Type, p.Name))
			}
			slices.Sort(parts)
			return strings.Join(parts, ",")
		}
		for i := range r.Entries {
			e := &r.Entries[i]
			slices.SortFunc(e.Entity, func(a, b kmsg.AlterClientQuotasResponseEntryEntity) int { return strings.Compare(a.Type, b.Type) })
		}
		slices.SortStableFunc(r.Entries, func(a, b kmsg.AlterClientQuotasResponseEntry) int { return strings.Compare(key(a), key(b)) })
	}
}
