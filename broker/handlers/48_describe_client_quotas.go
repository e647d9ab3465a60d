package handlers

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// DescribeClientQuotas, key 48, versions 0-1 (v1 flexible).
//
// Answered from this node's metadata image (controller.DescribeClientQuotas,
// Kafka's ClientQuotasImage.describe): the filter's components match an
// entity type exactly (a name, or the default entity) or by presence, and
// strict keeps only entities of exactly those types. A bad filter sets the
// response's error code and message (INVALID_REQUEST; an unknown entity
// type UNSUPPORTED_VERSION) and no entries. Entries are sorted by entity
// and values by key (Kafka's order is its hash maps').
func handleDescribeClientQuotas(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	comps := make([]controller.QuotaFilterComponent, 0, len(req.Components))
	for _, c := range req.Components {
		comps = append(comps, controller.QuotaFilterComponent{EntityType: c.EntityType, MatchType: int8(c.MatchType), Match: c.Match})
	}
	entries, code, msg := controller.DescribeClientQuotas(d.Controller.Image(), comps, req.Strict)
	// Kafka's answer carries an empty (not null) message on success.
	resp.ErrorCode, resp.ErrorMessage = code, ptrTo(msg)
	if code != 0 {
		return resp, nil
	}
	resp.Entries = make([]kmsg.DescribeClientQuotasResponseEntry, 0, len(entries))
	for _, e := range entries {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Entity.Parts() {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = p.Type, p.Name
			entry.Entity = append(entry.Entity, ent)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, e.Values[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}
