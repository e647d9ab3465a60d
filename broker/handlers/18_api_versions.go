package handlers

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions, key 18, versions 0-4.
//
// The answer is built from Table, so what we advertise is exactly what we
// dispatch. v1 adds throttle_time_ms; v3 is flexible and carries the
// client's software name and version (accepted, not checked); v3+ may list
// supported and finalized features, which we leave empty as a broker
// without feature flags does. A request of a version we do not know is
// answered by the connection layer in the v0 shape with
// UNSUPPORTED_VERSION and this same list, so that the client retries with
// a version we speak.
func handleApiVersions(d *Deps, r *Request) (kmsg.Response, error) {
	return ApiVersionsResponse(d), nil
}

// ApiVersionsResponse lists every API of Table with its version range.
func ApiVersionsResponse(d *Deps) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, e := range Table() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey = e.Key
		k.MinVersion = e.MinVersion
		k.MaxVersion = e.MaxVersion
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}
