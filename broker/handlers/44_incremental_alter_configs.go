package handlers

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/config"
	"github.com/samsa-broker/samsa/controller"
)

// IncrementalAlterConfigs, key 44, versions 0-1.
//
//   - v0: resources with per-setting operations SET=0, DELETE=1, APPEND=2,
//     SUBTRACT=3, and validate_only. APPEND and SUBTRACT add or remove
//     comma-separated items of a LIST setting; on any other setting they
//     are INVALID_CONFIG. Like Kafka, when the setting has no override yet
//     APPEND and SUBTRACT start from its current effective value (for
//     cleanup.policy, "delete"), not from an empty list. TOPIC resources
//     are validated as in CreateTopics (INVALID_CONFIG); BROKER resources
//     are "" (cluster-wide default) or this node's id (else
//     INVALID_REQUEST), and only dynamic broker settings may change
//     (INVALID_CONFIG "Cannot update these configs dynamically: [...]").
//   - v1: flexible.
//
// As in Kafka: a resource given twice fails every occurrence with
// INVALID_REQUEST "Each resource must appear at most once."; a setting
// named twice in one resource is INVALID_REQUEST "Error due to duplicate
// config keys"; a null value for any operation but DELETE is
// INVALID_REQUEST "Null value not supported for : name"; an unknown
// operation is UNKNOWN_SERVER_ERROR. BROKER_LOGGER resources set this
// node's log level (broker_logger.go), GROUP resources a group's configs
// (group_configs.go), CLIENT_METRICS resources a KIP-714 client metrics
// subscription (client_metrics.go: SET and DELETE; APPEND and SUBTRACT
// are INVALID_CONFIG there, as in Kafka). Other resource types are
// INVALID_REQUEST. Results are in request order.
func handleIncrementalAlterConfigs(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)

	alterEachResource(req.Resources,
		func(res kmsg.IncrementalAlterConfigsRequestResource) configResourceKey {
			return configResourceKey{res.ResourceType, res.ResourceName}
		},
		func(res kmsg.IncrementalAlterConfigsRequestResource) (int16, string) {
			return incrementalAlterResource(d, r, res, req.ValidateOnly)
		},
		func(res kmsg.IncrementalAlterConfigsRequestResource, code int16, msg string) {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType = res.ResourceType
			rr.ResourceName = res.ResourceName
			rr.ErrorCode = code
			rr.ErrorMessage = adminErrorMessage(code, msg)
			resp.Resources = append(resp.Resources, rr)
		})
	return resp, nil
}

// incrementalAlterResource applies one IncrementalAlterConfigs resource.
func incrementalAlterResource(d *Deps, r *Request, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, string) {
	if code, msg := checkAlterConfigNames(res.Configs, func(c kmsg.IncrementalAlterConfigsRequestResourceConfig) (string, bool) {
		return c.Name, c.Op != kmsg.IncrementalAlterConfigOpDelete && c.Value == nil
	}); code != 0 {
		return code, msg
	}
	// The operations are parsed only for a resource type Kafka serves: an
	// unknown type is INVALID_REQUEST "Unsupported resource type" first
	// (compat-tests/diff fuzzing).
	switch res.ResourceType {
	case kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger,
		kmsg.ConfigResourceTypeGroupConfig, kmsg.ConfigResourceTypeClientMetrics:
	default:
		return kerr.InvalidRequest.Code, fmt.Sprintf("Unsupported resource type: %s", res.ResourceType)
	}
	for _, c := range res.Configs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete,
			kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		default:
			// Kafka 4.4's OpType.forId throws IllegalArgumentException,
			// which it answers UNKNOWN_SERVER_ERROR with no message
			// (differential suite, step cm-diff-cm-bad-op).
			return kerr.UnknownServerError.Code, ""
		}
	}

	img := d.Controller.Image()
	switch res.ResourceType {
	case kmsg.ConfigResourceTypeBrokerLogger:
		return alterBrokerLoggers(d, res, validateOnly)
	case kmsg.ConfigResourceTypeGroupConfig:
		return alterGroupConfigs(d, res, validateOnly) // group_configs.go
	case kmsg.ConfigResourceTypeClientMetrics:
		return alterClientMetrics(d, res, validateOnly) // client_metrics.go
	case kmsg.ConfigResourceTypeTopic:
		if code, msg := alterTopicNameError(res.ResourceName); code != 0 {
			return code, msg
		}
		t := img.Topics[res.ResourceName]
		if t == nil {
			return kerr.UnknownTopicOrPartition.Code, fmt.Sprintf("Topic '%s' does not exist.", res.ResourceName)
		}
		levels := newBrokerLevels(d, img)
		ops := make([]controller.ConfigOp, 0, len(res.Configs))
		for _, c := range res.Configs {
			if isListOp(c.Op) {
				def, ok := findTopicDef(c.Name)
				if !ok || def.Type != config.List {
					return kerr.InvalidConfig.Code, fmt.Sprintf("Can't %s to key %s because its type is not LIST.", c.Op, c.Name)
				}
				if _, overridden := t.Configs[c.Name]; !overridden {
					base := topicConfigEntry(d, levels, def, nil, false).value
					ops = append(ops, listOpAsSet(c, base))
					continue
				}
			}
			ops = append(ops, controller.ConfigOp{Name: c.Name, Value: c.Value, Op: controller.OpType(c.Op)})
		}
		return d.Controller.AlterTopicConfigs(res.ResourceName, ops, validateOnly)

	case kmsg.ConfigResourceTypeBroker:
		if code, msg := alterBrokerResource(d, r, res.ResourceName); code != 0 {
			return code, msg
		}
		current := img.BrokerConfigs[res.ResourceName]
		ops := make([]controller.ConfigOp, 0, len(res.Configs))
		for _, c := range res.Configs {
			if isListOp(c.Op) {
				def, ok := findBrokerDef(c.Name)
				if !ok || def.Type != config.List {
					verb := "append"
					if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
						verb = "subtract"
					}
					return kerr.InvalidConfig.Code, fmt.Sprintf("Config value %s is not allowed for config key: %s", verb, c.Name)
				}
				if _, set := current[c.Name]; !set {
					var base *string
					if def.HasDefault {
						dflt := def.Default
						base = &dflt
					}
					ops = append(ops, listOpAsSet(c, base))
					continue
				}
			}
			ops = append(ops, controller.ConfigOp{Name: c.Name, Value: c.Value, Op: controller.OpType(c.Op)})
		}
		return d.Controller.AlterBrokerConfigs(res.ResourceName, ops, validateOnly, d.brokerConfigValidator(res.ResourceName))
	}
	return unsupportedAlterResource(res.ResourceType)
}

// isListOp reports whether op is APPEND or SUBTRACT.
func isListOp(op kmsg.IncrementalAlterConfigOp) bool {
	return op == kmsg.IncrementalAlterConfigOpAppend || op == kmsg.IncrementalAlterConfigOpSubtract
}

// listOpAsSet turns an APPEND or SUBTRACT on a setting without a stored
// value into a SET of base with the items added or removed: the
// controller's list operations work on the stored value only. Items keep
// their order and appear once, as in Kafka.
func listOpAsSet(c kmsg.IncrementalAlterConfigsRequestResourceConfig, base *string) controller.ConfigOp {
	var list []string
	if base != nil {
		list = splitConfigList(*base)
	}
	for _, item := range splitConfigList(*c.Value) {
		has := false
		for _, x := range list {
			has = has || x == item
		}
		switch {
		case c.Op == kmsg.IncrementalAlterConfigOpAppend && !has:
			list = append(list, item)
		case c.Op == kmsg.IncrementalAlterConfigOpSubtract && has:
			kept := list[:0]
			for _, x := range list {
				if x != item {
					kept = append(kept, x)
				}
			}
			list = kept
		}
	}
	v := strings.Join(list, ",")
	return controller.ConfigOp{Name: c.Name, Value: &v, Op: controller.OpSet}
}

// splitConfigList splits a LIST value into its trimmed, non-empty items.
func splitConfigList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
