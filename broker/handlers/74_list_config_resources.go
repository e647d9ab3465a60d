package handlers

import (
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
)

// ListConfigResources, key 74, versions 0-1 (KIP-1000's
// ListClientMetricsResources, renamed and widened by KIP-1142 in Kafka
// 4.1): the resources a DescribeConfigs could be asked about. Kafka
// 4.4's rules, which samsa follows:
//
//   - DESCRIBE_CONFIGS on the CLUSTER is needed, else the whole answer is
//     CLUSTER_AUTHORIZATION_FAILED (authzListConfigResources).
//   - v0 knows CLIENT_METRICS only; v1 TOPIC, BROKER, BROKER_LOGGER,
//     CLIENT_METRICS and GROUP. An empty resource_types asks for every
//     type the version knows; a type it does not know makes the answer
//     UNSUPPORTED_VERSION with no resources.
//   - The resources come grouped by type, in Kafka's order: the groups
//     that have group configs, the client metrics subscriptions
//     (KIP-714, client_metrics.go), the live
//     brokers reachable on the request's listener as BROKER_LOGGER
//     resources and again as BROKER resources (by node id), then every
//     topic, internal ones included. Within a type samsa sorts by name
//     (Kafka's order there is a hash set's), brokers by node id.
func handleListConfigResources(d *Deps, r *Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	supported := []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeClientMetrics}
	if r.Header.APIVersion >= 1 {
		supported = []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker,
			kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics, kmsg.ConfigResourceTypeGroupConfig}
	}
	asked := make([]kmsg.ConfigResourceType, 0, len(req.ResourceTypes))
	for _, t := range req.ResourceTypes {
		asked = append(asked, kmsg.ConfigResourceType(t))
	}
	if len(asked) == 0 {
		asked = supported
	}
	for _, t := range asked {
		if !slices.Contains(supported, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return resp, nil
		}
	}
	img := d.Controller.Image()
	add := func(typ kmsg.ConfigResourceType, names []string) {
		if !slices.Contains(asked, typ) {
			return
		}
		for _, n := range names {
			res := kmsg.NewListConfigResourcesResponseConfigResource()
			res.Name, res.Type = n, int8(typ)
			resp.ConfigResources = append(resp.ConfigResources, res)
		}
	}
	groups := configuredGroups(img)
	sort.Strings(groups)
	add(kmsg.ConfigResourceTypeGroupConfig, groups)
	add(kmsg.ConfigResourceTypeClientMetrics, clientMetricsNames(img)) // client_metrics.go
	brokers := brokersOnListener(img, r.ListenerName)
	add(kmsg.ConfigResourceTypeBrokerLogger, brokers)
	add(kmsg.ConfigResourceTypeBroker, brokers)
	topics := make([]string, 0, len(img.Topics))
	for name := range img.Topics {
		topics = append(topics, name)
	}
	sort.Strings(topics)
	add(kmsg.ConfigResourceTypeTopic, topics)
	return resp, nil
}

// configuredGroups names the groups that have at least one group config.
func configuredGroups(img *controller.Image) []string {
	var out []string
	for g, cfg := range img.GroupConfigs {
		if len(cfg) > 0 {
			out = append(out, g)
		}
	}
	return out
}

// brokersOnListener names, by node id, the unfenced brokers that have the
// listener (every unfenced broker when the listener is unnamed, as on a
// controller listener or in tests), as Kafka's getBrokerNodes.
func brokersOnListener(img *controller.Image, listener string) []string {
	var out []string
	for _, b := range sortedBrokers(img) {
		has := listener == "" || len(b.Listeners) == 0
		for _, l := range b.Listeners {
			has = has || l.Name == listener
		}
		if has {
			out = append(out, strconv.Itoa(int(b.ID)))
		}
	}
	return out
}
