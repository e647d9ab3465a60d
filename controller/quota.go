package controller

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Client quotas in the metadata log, as Kafka's ClientQuotaRecord: one
// record sets (or removes) one quota key of one entity, an entity being a
// combination of user, client-id and ip names where a missing name (nil
// on the wire) is that type's default entity. The quota values are what
// kafka-configs --alter --entity-type users|clients|ips sets, and what the
// brokers enforce (broker/quota).

// RecordClientQuota is the type of ClientQuotaRecord.
const RecordClientQuota RecordType = 12

// Quota entity types, as Kafka's ClientQuotaEntity.
const (
	QuotaEntityUser     = "user"
	QuotaEntityClientID = "client-id"
	QuotaEntityIP       = "ip"
)

// Quota keys (Kafka's QuotaConfig).
const (
	QuotaProducerByteRate       = "producer_byte_rate"
	QuotaConsumerByteRate       = "consumer_byte_rate"
	QuotaRequestPercentage      = "request_percentage"
	QuotaControllerMutationRate = "controller_mutation_rate"
	QuotaConnectionCreationRate = "connection_creation_rate"
)

// userClientQuotaKeys tells, for each key a user or client-id entity may
// set, whether its value must be integral (Kafka's LONG keys) or may be
// fractional (DOUBLE).
var userClientQuotaKeys = map[string]bool{
	QuotaProducerByteRate:       true,
	QuotaConsumerByteRate:       true,
	QuotaRequestPercentage:      false,
	QuotaControllerMutationRate: false,
}

// QuotaEntityName is one part of a quota entity: absent (Present false),
// the default entity of its type (Default), or a name.
type QuotaEntityName struct {
	Present bool
	Default bool
	Name    string
}

// QuotaEntity is the entity a quota applies to; comparable, so it keys
// Image.ClientQuotas.
type QuotaEntity struct {
	User     QuotaEntityName
	ClientID QuotaEntityName
	IP       QuotaEntityName
}

// QuotaEntityPart is one (type, name) pair of an entity as the protocol
// and the record carry it; Name nil is the default entity.
type QuotaEntityPart struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// quotaName returns the QuotaEntityName of a wire name.
func quotaName(name *string) QuotaEntityName {
	if name == nil {
		return QuotaEntityName{Present: true, Default: true}
	}
	return QuotaEntityName{Present: true, Name: *name}
}

// Parts returns the entity's (type, name) pairs: user, client-id, ip.
func (e QuotaEntity) Parts() []QuotaEntityPart {
	var out []QuotaEntityPart
	add := func(typ string, n QuotaEntityName) {
		if !n.Present {
			return
		}
		p := QuotaEntityPart{Type: typ}
		if !n.Default {
			name := n.Name
			p.Name = &name
		}
		out = append(out, p)
	}
	add(QuotaEntityUser, e.User)
	add(QuotaEntityClientID, e.ClientID)
	add(QuotaEntityIP, e.IP)
	return out
}

// String formats the entity as Kafka's ClientQuotaEntity does in error
// messages ("ClientQuotaEntity(entries={user=alice, client-id=null})").
func (e QuotaEntity) String() string {
	var parts []string
	for _, p := range e.Parts() {
		name := "null"
		if p.Name != nil {
			name = *p.Name
		}
		parts = append(parts, p.Type+"="+name)
	}
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

// size is the number of entity types the entity names.
func (e QuotaEntity) size() int {
	n := 0
	for _, p := range []QuotaEntityName{e.User, e.ClientID, e.IP} {
		if p.Present {
			n++
		}
	}
	return n
}

// part returns the entity's name of one type.
func (e QuotaEntity) part(typ string) QuotaEntityName {
	if n := entityField(&e, typ); n != nil {
		return *n
	}
	return QuotaEntityName{}
}

// entityField returns the field of e that holds the name of type typ,
// nil for an unknown type.
func entityField(e *QuotaEntity, typ string) *QuotaEntityName {
	switch typ {
	case QuotaEntityUser:
		return &e.User
	case QuotaEntityClientID:
		return &e.ClientID
	case QuotaEntityIP:
		return &e.IP
	}
	return nil
}

// ClientQuotaRecord sets (Remove false) or removes one quota key of one
// entity.
type ClientQuotaRecord struct {
	Entity []QuotaEntityPart `json:"entity"`
	Key    string            `json:"key"`
	Value  float64           `json:"value,omitempty"`
	Remove bool              `json:"remove,omitempty"`
}

func (ClientQuotaRecord) recordType() RecordType { return RecordClientQuota }

// entityFromParts builds an entity; ok is false for an unknown or
// repeated type, or an empty list.
func entityFromParts(parts []QuotaEntityPart) (QuotaEntity, bool) {
	var e QuotaEntity
	if len(parts) == 0 {
		return e, false
	}
	for _, p := range parts {
		dst := entityField(&e, p.Type)
		if dst == nil || dst.Present {
			return e, false
		}
		*dst = quotaName(p.Name)
	}
	return e, true
}

// applyClientQuota applies r to the builder's image.
func (b *builder) applyClientQuota(r ClientQuotaRecord) error {
	e, ok := entityFromParts(r.Entity)
	if !ok || r.Key == "" {
		return fmt.Errorf("%w: client quota record for entity %v key %q", ErrApply, r.Entity, r.Key)
	}
	if !b.quotasOwned {
		b.img.ClientQuotas = cloneMap(b.img.ClientQuotas)
		b.quotasOwned = true
	}
	values := cloneMap(b.img.ClientQuotas[e])
	if r.Remove {
		delete(values, r.Key)
	} else {
		if math.IsNaN(r.Value) || math.IsInf(r.Value, 0) {
			return fmt.Errorf("%w: client quota %s of %s is %v", ErrApply, r.Key, e, r.Value)
		}
		values[r.Key] = r.Value
	}
	if len(values) == 0 {
		delete(b.img.ClientQuotas, e)
	} else {
		b.img.ClientQuotas[e] = values
	}
	return nil
}

// quotaEntityCompare orders entities for snapshots and descriptions: by
// user, client-id, ip, each absent first, then default, then by name.
func quotaEntityCompare(a, b QuotaEntity) int {
	name := func(n QuotaEntityName) int {
		switch {
		case !n.Present:
			return 0
		case n.Default:
			return 1
		}
		return 2
	}
	for _, typ := range []string{QuotaEntityUser, QuotaEntityClientID, QuotaEntityIP} {
		x, y := a.part(typ), b.part(typ)
		if c := cmp.Compare(name(x), name(y)); c != 0 {
			return c
		}
		if c := strings.Compare(x.Name, y.Name); c != 0 {
			return c
		}
	}
	return 0
}

// clientQuotaRecords returns the records that rebuild img's client
// quotas, by entity and key, for snapshots.
func clientQuotaRecords(recs []Record, img *Image) []Record {
	entities := slices.SortedFunc(maps.Keys(img.ClientQuotas), quotaEntityCompare)
	for _, e := range entities {
		values := img.ClientQuotas[e]
		for _, k := range slices.Sorted(maps.Keys(values)) {
			recs = append(recs, ClientQuotaRecord{Entity: e.Parts(), Key: k, Value: values[k]})
		}
	}
	return recs
}

// QuotaOp is one operation of an AlterClientQuotas entry: set Key to
// Value, or remove it.
type QuotaOp struct {
	Key    string
	Value  float64
	Remove bool
}

// QuotaAlteration is one entry of AlterClientQuotas.
type QuotaAlteration struct {
	Entity []QuotaEntityPart
	Ops    []QuotaOp
}

// QuotaResult is the outcome of one QuotaAlteration.
type QuotaResult struct {
	Entity    []QuotaEntityPart
	ErrorCode int16
	Message   string
}

// AlterClientQuotas validates and applies alterations as Kafka's
// ClientQuotaControlManager: entity types user, client-id and ip (ip
// alone), an empty name refused, the keys of the entity's kind
// (producer_byte_rate and consumer_byte_rate integral, request_percentage
// and controller_mutation_rate fractional; connection_creation_rate
// integral for ip), values above 0, a key named twice in one entry and an
// entity named twice in one request refused; every failure is
// INVALID_REQUEST with Kafka's message. The records of every entry that
// passed are committed together; validateOnly commits nothing. Results are
// one per entry, in request order.
func (c *Controller) AlterClientQuotas(alts []QuotaAlteration, validateOnly bool) []QuotaResult {
	var results []QuotaResult
	err := c.write(validateOnly, func(img *Image) []Record {
		var recs []Record
		results = results[:0]
		seen := map[QuotaEntity]bool{}
		for _, a := range alts {
			res := QuotaResult{Entity: a.Entity}
			recs = decideQuotaAlteration(img, a, seen, recs, &res)
			results = append(results, res)
		}
		return recs
	})
	failResults(results, err, func(r *QuotaResult) (*int16, *string) { return &r.ErrorCode, &r.Message })
	return results
}

// decideQuotaAlteration checks one alteration and appends its records.
func decideQuotaAlteration(img *Image, a QuotaAlteration, seen map[QuotaEntity]bool, recs []Record, res *QuotaResult) []Record {
	fail := func(msg string) []Record {
		res.ErrorCode, res.Message = kerr.InvalidRequest.Code, msg
		return recs
	}
	if len(a.Entity) == 0 {
		return fail("Invalid empty client quota entity")
	}
	var e QuotaEntity
	for _, p := range a.Entity {
		dst := entityField(&e, p.Type)
		if dst == nil {
			return fail("Unhandled client quota entity type: " + p.Type)
		}
		if dst.Present {
			return fail("Invalid client quota entity, duplicate entity entry " + p.Type)
		}
		if p.Name != nil && *p.Name == "" {
			return fail("Empty " + p.Type + " not supported")
		}
		*dst = quotaName(p.Name)
	}
	keys := map[string]bool{}
	for _, op := range a.Ops {
		if keys[op.Key] {
			// Kafka reports the duplicate key, then, because the entity
			// already has a result, "Ignoring duplicate entity".
			return fail("Ignoring duplicate entity " + e.String())
		}
		keys[op.Key] = true
	}
	if seen[e] {
		return fail("Ignoring duplicate entity " + e.String())
	}
	seen[e] = true
	var valid map[string]bool
	switch {
	case e.IP.Present && (e.User.Present || e.ClientID.Present):
		return fail("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
	case e.IP.Present:
		if !e.IP.Default && net.ParseIP(e.IP.Name) == nil {
			// Kafka also accepts a resolvable host name; samsa does no
			// DNS lookup in the controller's decision.
			return fail(e.IP.Name + " is not a valid IP or resolvable host.")
		}
		valid = map[string]bool{QuotaConnectionCreationRate: true}
	default:
		valid = userClientQuotaKeys
	}
	current := img.ClientQuotas[e]
	var mine []Record
	for _, op := range a.Ops {
		if op.Remove {
			if _, ok := current[op.Key]; ok {
				mine = append(mine, ClientQuotaRecord{Entity: e.Parts(), Key: op.Key, Remove: true})
			}
			continue
		}
		if code, msg := validateQuotaValue(valid, op.Key, op.Value); code != 0 {
			res.ErrorCode, res.Message = code, msg
			return recs
		}
		if v, ok := current[op.Key]; !ok || v != op.Value {
			mine = append(mine, ClientQuotaRecord{Entity: e.Parts(), Key: op.Key, Value: op.Value})
		}
	}
	return append(recs, mine...)
}

// validateQuotaValue checks one quota value as Kafka's
// ClientQuotaControlManager.validateQuotaKeyValue.
func validateQuotaValue(valid map[string]bool, key string, value float64) (int16, string) {
	integral, ok := valid[key]
	if !ok {
		return kerr.InvalidRequest.Code, "Invalid configuration key " + key
	}
	if !(value > 0) {
		return kerr.InvalidRequest.Code, "Quota " + key + " must be greater than 0"
	}
	if !integral {
		return 0, ""
	}
	limit, typ := float64(math.MaxInt64), "a LONG"
	if key == QuotaConnectionCreationRate {
		limit, typ = math.MaxInt32, "an INT"
	}
	if value > limit {
		return kerr.InvalidRequest.Code, "Proposed value for " + key + " is too large for " + typ + "."
	}
	if math.Abs(math.Mod(value, 1)) > 1e-6 {
		return kerr.InvalidRequest.Code, key + " cannot be a fractional value."
	}
	return 0, ""
}

// Describe match types (DescribeClientQuotas' MatchType).
const (
	QuotaMatchExact     int8 = 0
	QuotaMatchDefault   int8 = 1
	QuotaMatchSpecified int8 = 2
)

// QuotaFilterComponent is one component of a DescribeClientQuotas filter.
type QuotaFilterComponent struct {
	EntityType string
	MatchType  int8
	Match      *string
}

// QuotaEntry is one entity and its quota values.
type QuotaEntry struct {
	Entity QuotaEntity
	Values map[string]float64
}

// DescribeClientQuotas returns the entities of img that match the filter,
// as Kafka's ClientQuotasImage.describe: an exact component keeps the
// entities with that name (MatchDefault: the default entity), a specified
// one those that name the type at all; strict keeps only entities of
// exactly the filter's types (and, with no component, none). A bad filter
// is INVALID_REQUEST (an unknown entity type UNSUPPORTED_VERSION) with
// Kafka's message. Entries are sorted by entity.
func DescribeClientQuotas(img *Image, components []QuotaFilterComponent, strict bool) ([]QuotaEntry, int16, string) {
	exact := map[string]QuotaEntityName{}
	typed := map[string]bool{}
	for _, c := range components {
		switch {
		case c.EntityType == "":
			return nil, kerr.InvalidRequest.Code, "Invalid empty entity type."
		case typed[c.EntityType]:
			return nil, kerr.InvalidRequest.Code, "Entity type " + c.EntityType + " cannot appear more than once in the filter."
		}
		if _, ok := exact[c.EntityType]; ok {
			return nil, kerr.InvalidRequest.Code, "Entity type " + c.EntityType + " cannot appear more than once in the filter."
		}
		switch c.EntityType {
		case QuotaEntityUser, QuotaEntityClientID, QuotaEntityIP:
		default:
			return nil, kerr.UnsupportedVersion.Code, "Unsupported entity type " + c.EntityType
		}
		switch c.MatchType {
		case QuotaMatchExact:
			if c.Match == nil {
				return nil, kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
			exact[c.EntityType] = QuotaEntityName{Present: true, Name: *c.Match}
		case QuotaMatchDefault:
			if c.Match != nil {
				return nil, kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
			exact[c.EntityType] = QuotaEntityName{Present: true, Default: true}
		case QuotaMatchSpecified:
			if c.Match != nil {
				return nil, kerr.InvalidRequest.Code, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
			typed[c.EntityType] = true
		default:
			return nil, kerr.InvalidRequest.Code, fmt.Sprintf("Unknown match type %d", c.MatchType)
		}
	}
	_, ipExact := exact[QuotaEntityIP]
	_, userExact := exact[QuotaEntityUser]
	_, clientExact := exact[QuotaEntityClientID]
	if (ipExact || typed[QuotaEntityIP]) && (userExact || typed[QuotaEntityUser] || clientExact || typed[QuotaEntityClientID]) {
		return nil, kerr.InvalidRequest.Code, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component."
	}
	var out []QuotaEntry
	if len(exact)+len(typed) == 0 && strict {
		return out, 0, ""
	}
	for e, values := range img.ClientQuotas {
		if strict && e.size() != len(exact)+len(typed) {
			continue
		}
		ok := true
		for typ, name := range exact {
			if e.part(typ) != name {
				ok = false
			}
		}
		for typ := range typed {
			if !e.part(typ).Present {
				ok = false
			}
		}
		if ok {
			out = append(out, QuotaEntry{Entity: e, Values: values})
		}
	}
	slices.SortFunc(out, func(a, b QuotaEntry) int { return quotaEntityCompare(a.Entity, b.Entity) })
	return out, 0, ""
}
