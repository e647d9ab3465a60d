package broker

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/samsa-broker/samsa/broker/quota"
)

// quotaCollector exports the client quotas' measures under the names the
// JMX exporter gives Kafka's per-client quota sensors
// (kafka.server:type=Produce|Fetch|Request|ControllerMutation,user=,client-id=):
// kafka_server_<type>_throttle_time and the type's rate
// (kafka_server_produce_byte_rate, kafka_server_fetch_byte_rate,
// kafka_server_request_request_time, kafka_server_controllermutation_mutation_rate),
// labelled user and client_id. Only entities with a quota in use appear.
type quotaCollector struct {
	m              *quota.Manager
	throttle, rate map[string]*prometheus.Desc // by quota type
}

func newQuotaCollector(m *quota.Manager) quotaCollector {
	c := quotaCollector{m: m, throttle: map[string]*prometheus.Desc{}, rate: map[string]*prometheus.Desc{}}
	labels := []string{"user", "client_id"}
	for typ, rate := range map[string]string{"Produce": "byte_rate", "Fetch": "byte_rate", "Request": "request_time", "ControllerMutation": "mutation_rate"} {
		prefix := "kafka_server_" + strings.ToLower(typ) + "_"
		c.throttle[typ] = prometheus.NewDesc(prefix+"throttle_time",
			"Average throttle in ms of the client's throttled requests over the quota window ("+typ+" throttle-time).", labels, nil)
		c.rate[typ] = prometheus.NewDesc(prefix+rate,
			"The client's rate over the quota window, as its quota counts it ("+typ+" "+strings.ReplaceAll(rate, "_", "-")+").", labels, nil)
	}
	return c
}

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.throttle {
		ch <- d
	}
	for _, d := range c.rate {
		ch <- d
	}
}

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.m.Stats(time.Now()) {
		if d := c.throttle[s.Type]; d != nil {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, s.ThrottleMs, s.User, s.ClientID)
			ch <- prometheus.MustNewConstMetric(c.rate[s.Type], prometheus.GaugeValue, s.Rate, s.User, s.ClientID)
		}
	}
}
