package handlers

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// AlterConfigs, key 33, versions 0-2 (the legacy, replace-all API).
//
//   - v0: resources with the complete new set of dynamic configs, and
//     validate_only. A TOPIC resource's overrides are replaced by the given
//     set (settings left out return to their defaults); the set is checked
//     like CreateTopics configs (INVALID_CONFIG). A BROKER resource is ""
//     (cluster-wide default) or this node's id (else INVALID_REQUEST); its
//     dynamic configs are replaced likewise, and a setting that cannot
//     change at runtime fails the resource with INVALID_CONFIG "Cannot
//     update these configs dynamically: [...]". A CLIENT_METRICS resource
//     (a KIP-714 subscription) gets the given configs, validated as a
//     whole (client_metrics.go); an empty set removes it.
//   - v1: throttle_time_ms after the response (always 0).
//   - v2: flexible.
//
// As in Kafka: a resource given twice fails every occurrence with
// INVALID_REQUEST "Each resource must appear at most once."; a config name
// given twice in one resource is INVALID_REQUEST "Error due to duplicate
// config keys"; a null value is INVALID_REQUEST "Null value not supported
// for : name". Other resource types are INVALID_REQUEST. Results are in
// request order.
func handleAlterConfigs(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)

	alterEachResource(req.Resources,
		func(res kmsg.AlterConfigsRequestResource) configResourceKey {
			return configResourceKey{res.ResourceType, res.ResourceName}
		},
		func(res kmsg.AlterConfigsRequestResource) (int16, string) {
			return alterConfigsResource(d, r, res, req.ValidateOnly)
		},
		func(res kmsg.AlterConfigsRequestResource, code int16, msg string) {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType = res.ResourceType
			rr.ResourceName = res.ResourceName
			rr.ErrorCode = code
			rr.ErrorMessage = adminErrorMessage(code, msg)
			resp.Resources = append(resp.Resources, rr)
		})
	return resp, nil
}

// alterConfigsResource applies one legacy AlterConfigs resource.
func alterConfigsResource(d *Deps, r *Request, res kmsg.AlterConfigsRequestResource, validateOnly bool) (int16, string) {
	if code, msg := checkAlterConfigNames(res.Configs, func(c kmsg.AlterConfigsRequestResourceConfig) (string, bool) {
		return c.Name, c.Value == nil
	}); code != 0 {
		return code, msg
	}
	configs := make(map[string]string, len(res.Configs))
	for _, c := range res.Configs {
		configs[c.Name] = *c.Value
	}
	switch res.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if code, msg := alterTopicNameError(res.ResourceName); code != 0 {
			return code, msg
		}
		return d.Controller.SetTopicConfigs(res.ResourceName, configs, validateOnly)
	case kmsg.ConfigResourceTypeGroupConfig:
		return setGroupConfigs(d, res.ResourceName, configs, validateOnly) // group_configs.go
	case kmsg.ConfigResourceTypeClientMetrics:
		return setClientMetrics(d, res.ResourceName, configs, validateOnly) // client_metrics.go
	case kmsg.ConfigResourceTypeBroker:
		if code, msg := alterBrokerResource(d, r, res.ResourceName); code != 0 {
			return code, msg
		}
		if code, msg := d.brokerConfigValidator(res.ResourceName)(configs); code != 0 {
			return code, msg
		}
		// Replace-all as a diff against the current image. A concurrent
		// change to the same resource between this read and the
		// controller's commit is overwritten key by key, not wholesale;
		// Kafka's legacy API has the same last-writer-wins semantics.
		ops := replaceAllOps(d.Controller.Image().BrokerConfigs[res.ResourceName], configs)
		return d.Controller.AlterBrokerConfigs(res.ResourceName, ops, validateOnly, d.brokerConfigValidator(res.ResourceName))
	}
	return unsupportedAlterResource(res.ResourceType)
}

// alterTopicNameError is INVALID_TOPIC_EXCEPTION for a topic resource of
// either alter API whose name is not legal: Kafka 4.4's controller judges
// the name (Topic.validate) before it looks the topic up
// (compat-tests/diff fuzzing). The empty name is left to the lookup.
func alterTopicNameError(name string) (int16, string) {
	if name == "" {
		return 0, ""
	}
	return controller.ValidateTopicName(name)
}

// checkAlterConfigNames answers, as Kafka does, a resource of either
// alter API that names a setting twice or gives a null value where the
// operation needs one; nameOf returns a config's name and whether its
// value is a null that is not allowed.
func checkAlterConfigNames[C any](configs []C, nameOf func(C) (string, bool)) (int16, string) {
	names := make([]string, len(configs))
	var nulls []string
	for i, c := range configs {
		name, null := nameOf(c)
		names[i] = name
		if null {
			nulls = append(nulls, name)
		}
	}
	if hasDuplicateNames(names) {
		return kerr.InvalidRequest.Code, "Error due to duplicate config keys"
	}
	if len(nulls) > 0 {
		return kerr.InvalidRequest.Code, "Null value not supported for : " + strings.Join(nulls, ", ")
	}
	return 0, ""
}

// alterBrokerResource checks a BROKER resource name for the alter APIs,
// like Kafka's ConfigAdminManager.validateResourceNameIsCurrentNodeId.
// (Kafka's message prints its own id twice; we print the id received.)
// As in Kafka the receiving broker checks, before it forwards the
// request (broker.Node.forward keeps a request naming another broker
// here); a request that reached the active controller through its
// controller listener was forwarded and is not checked again.
func alterBrokerResource(d *Deps, r *Request, name string) (int16, string) {
	if name == "" || r.Controller {
		return 0, ""
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Node id must be an integer, but it is: %s", name)
	}
	if int32(id) != d.Config.NodeID {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected node id. Expected %d, but received %d", d.Config.NodeID, id)
	}
	return 0, ""
}

// unsupportedAlterResource answers a resource type we cannot alter.
func unsupportedAlterResource(t kmsg.ConfigResourceType) (int16, string) {
	if t.String() == "UNKNOWN" {
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unknown resource type %d.", int8(t))
	}
	return kerr.InvalidRequest.Code, fmt.Sprintf("Unexpected resource type %s.", t)
}

// replaceAllOps is a legacy AlterConfigs replace-all as changes to the
// current configs: each one not given deleted, each one given set, in
// name order.
func replaceAllOps(current, configs map[string]string) []controller.ConfigOp {
	var ops []controller.ConfigOp
	for _, n := range sortedConfigNames(current) {
		if _, keep := configs[n]; !keep {
			ops = append(ops, controller.ConfigOp{Name: n, Op: controller.OpDelete})
		}
	}
	for _, n := range sortedConfigNames(configs) {
		v := configs[n]
		ops = append(ops, controller.ConfigOp{Name: n, Value: &v, Op: controller.OpSet})
	}
	return ops
}

// sortedConfigNames returns the keys of m in order.
func sortedConfigNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
