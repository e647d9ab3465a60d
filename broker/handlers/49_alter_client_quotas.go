package handlers

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// AlterClientQuotas, key 49, versions 0-1 (v1 flexible).
//
// Sets or removes quota keys of user, client-id and ip entities in the
// metadata log (controller.AlterClientQuotas, Kafka's
// ClientQuotaControlManager), each entry answered on its own with
// INVALID_REQUEST and Kafka's message when it fails; validate_only checks
// without committing. Forwarded to the active controller.
func handleAlterClientQuotas(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	alts := make([]controller.QuotaAlteration, 0, len(req.Entries))
	for _, e := range req.Entries {
		var a controller.QuotaAlteration
		for _, ent := range e.Entity {
			a.Entity = append(a.Entity, controller.QuotaEntityPart{Type: ent.Type, Name: ent.Name})
		}
		for _, op := range e.Ops {
			a.Ops = append(a.Ops, controller.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		alts = append(alts, a)
	}
	for _, res := range d.Controller.AlterClientQuotas(alts, req.ValidateOnly) {
		entry := kmsg.NewAlterClientQuotasResponseEntry()
		entry.ErrorCode = res.ErrorCode
		if res.ErrorCode != 0 {
			entry.ErrorMessage = ptrTo(res.Message)
		}
		for _, p := range res.Entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = p.Type, p.Name
			entry.Entity = append(entry.Entity, ent)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}
