package metrics

import (
	"context"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/samsa-broker/samsa/controller"
	"github.com/samsa-broker/samsa/storage"
)

// stateCollector computes gauges at scrape time from the metadata image,
// the local logs and the group coordinator: nothing is kept up to date
// between scrapes.
type stateCollector struct{ m *Metrics }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnections, descReauthentications, descExpiredKilled, descRequestQueue, descBrokerState,
		descPartitionCount, descLeaderCount, descUnderReplicated, descUnderMinISR, descAtMinISR, descOfflineReplicas,
		descISRShrinks, descISRExpands,
		descActiveController, descOfflinePartitions, descFencedBrokers, descActiveBrokers, descGlobalTopics,
		descGlobalPartitions, descPreferredImbalance, descLogSize, descLogStart, descLogEnd,
		descTopicPartitions, descPartitionCurrent, descPartitionOldest, descPartitionISR, descPartitionLeader,
		descPartitionReplicas, descPartitionUnder, descBrokers,
		descGroupOffset, descGroupLag, descGroupOffsetSum, descGroupLagSum, descGroupMembers} {
		ch <- d
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	o := c.m.opts
	if o.Connections != nil {
		for name, n := range o.Connections() {
			gauge(ch, descConnections, float64(n), name, "0")
		}
	}
	if o.Reauthentications != nil {
		for name, r := range o.Reauthentications() {
			gauge(ch, descReauthentications, float64(r.Successful), name, "0")
			gauge(ch, descExpiredKilled, float64(r.ExpiredKilled), name, "0")
		}
	}
	if o.RequestQueueSize != nil {
		gauge(ch, descRequestQueue, float64(o.RequestQueueSize()))
	}
	if o.BrokerState != nil {
		gauge(ch, descBrokerState, float64(o.BrokerState()))
	}
	var logs map[storage.TopicPartition]*storage.Log
	if o.Logs != nil {
		logs = o.Logs()
		for tp, l := range logs {
			p := strconv.Itoa(int(tp.Partition))
			gauge(ch, descLogSize, float64(l.Size()), tp.Topic, p)
			gauge(ch, descLogStart, float64(l.LogStartOffset()), tp.Topic, p)
			gauge(ch, descLogEnd, float64(l.LogEndOffset()), tp.Topic, p)
		}
	}
	if o.Image == nil {
		return
	}
	img := o.Image()
	c.collectImage(ch, img, logs)
	if o.Groups != nil {
		c.collectGroups(ch, logs)
	}
}

// collectImage emits the replica manager gauges of this broker, the
// controller gauges (on the active controller) and kafka_exporter's topic
// gauges for the partitions led here.
func (c stateCollector) collectImage(ch chan<- prometheus.Metric, img *controller.Image, logs map[storage.TopicPartition]*storage.Log) {
	o := c.m.opts
	active := o.ActiveController != nil && o.ActiveController() == o.NodeID
	var hosted, leaders, under, underMin, atMin, offline int
	var offlineParts, partitions, imbalance int
	for name, t := range img.Topics {
		minISR := int(o.MinInsyncReplicas)
		if v, ok := t.Configs["min.insync.replicas"]; ok {
			if n, err := strconv.Atoi(v); err == nil {
				minISR = n
			}
		}
		if active {
			gauge(ch, descTopicPartitions, float64(len(t.Partitions)), name)
		}
		for _, p := range t.Partitions {
			partitions++
			if p.Leader < 0 {
				offlineParts++
			}
			if len(p.Replicas) > 0 && p.Leader >= 0 && p.Leader != p.Replicas[0] {
				imbalance++
			}
			if !slices.Contains(p.Replicas, o.NodeID) {
				continue
			}
			hosted++
			tp := storage.TopicPartition{Topic: name, Partition: p.Partition}
			l, haveLog := logs[tp]
			if logs != nil && !haveLog {
				offline++
			}
			if p.Leader != o.NodeID {
				continue
			}
			leaders++
			isUnder := len(p.ISR) < len(p.Replicas)
			if isUnder {
				under++
			}
			if len(p.ISR) < minISR {
				underMin++
			} else if len(p.ISR) == minISR {
				atMin++
			}
			ps := strconv.Itoa(int(p.Partition))
			gauge(ch, descPartitionISR, float64(len(p.ISR)), name, ps)
			gauge(ch, descPartitionLeader, float64(p.Leader), name, ps)
			gauge(ch, descPartitionReplicas, float64(len(p.Replicas)), name, ps)
			gauge(ch, descPartitionUnder, b2f(isUnder), name, ps)
			if haveLog {
				gauge(ch, descPartitionCurrent, float64(l.HighWatermark()), name, ps)
				gauge(ch, descPartitionOldest, float64(l.LogStartOffset()), name, ps)
			}
		}
	}
	gauge(ch, descPartitionCount, float64(hosted))
	gauge(ch, descLeaderCount, float64(leaders))
	gauge(ch, descUnderReplicated, float64(under))
	gauge(ch, descUnderMinISR, float64(underMin))
	gauge(ch, descAtMinISR, float64(atMin))
	gauge(ch, descOfflineReplicas, float64(offline))
	if o.ISRChanges != nil {
		shrinks, expands := o.ISRChanges()
		ch <- prometheus.MustNewConstMetric(descISRShrinks, prometheus.CounterValue, float64(shrinks))
		ch <- prometheus.MustNewConstMetric(descISRExpands, prometheus.CounterValue, float64(expands))
	}

	gauge(ch, descActiveController, b2f(active))
	var fenced, unfenced, topics int
	if active {
		for _, b := range img.Brokers {
			if b.Fenced {
				fenced++
			} else {
				unfenced++
			}
		}
		topics = len(img.Topics)
	} else {
		offlineParts, partitions, imbalance = 0, 0, 0
	}
	gauge(ch, descOfflinePartitions, float64(offlineParts))
	gauge(ch, descFencedBrokers, float64(fenced))
	gauge(ch, descActiveBrokers, float64(unfenced))
	gauge(ch, descGlobalTopics, float64(topics))
	gauge(ch, descGlobalPartitions, float64(partitions))
	gauge(ch, descPreferredImbalance, float64(imbalance))
	if active {
		gauge(ch, descBrokers, float64(len(img.Brokers)))
	}
}

// collectGroups emits kafka_exporter's consumer group gauges for the
// groups this broker coordinates: lag is the partition's high watermark
// (from its local log) minus the committed offset. Partitions without a
// committed offset, or without a local log, have no lag series.
func (c stateCollector) collectGroups(ch chan<- prometheus.Metric, logs map[storage.TopicPartition]*storage.Log) {
	o := c.m.opts
	ctx, cancel := context.WithTimeout(context.Background(), o.ScrapeTimeout)
	defer cancel()
	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.Version = 4
	list := o.Groups.ListGroups(ctx, lreq)
	if list == nil || len(list.Groups) == 0 {
		return
	}
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Version = 8
	for _, g := range list.Groups {
		dreq.Groups = append(dreq.Groups, g.Group)
		fg := kmsg.NewOffsetFetchRequestGroup()
		fg.Group = g.Group // nil Topics: every committed partition
		freq.Groups = append(freq.Groups, fg)
	}
	if desc := o.Groups.DescribeGroups(ctx, dreq); desc != nil {
		for _, g := range desc.Groups {
			if g.ErrorCode == 0 {
				gauge(ch, descGroupMembers, float64(len(g.Members)), g.Group)
			}
		}
	}
	resp := o.Groups.OffsetFetch(ctx, freq)
	if resp == nil {
		return
	}
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			continue
		}
		for _, t := range g.Topics {
			var offsetSum, lagSum int64
			seen := false
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.Offset < 0 {
					continue
				}
				seen = true
				ps := strconv.Itoa(int(p.Partition))
				gauge(ch, descGroupOffset, float64(p.Offset), g.Group, t.Topic, ps)
				offsetSum += p.Offset
				l, ok := logs[storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}]
				if !ok {
					continue
				}
				lag := max(l.HighWatermark()-p.Offset, 0)
				lagSum += lag
				gauge(ch, descGroupLag, float64(lag), g.Group, t.Topic, ps)
			}
			if seen {
				gauge(ch, descGroupOffsetSum, float64(offsetSum), g.Group, t.Topic)
				gauge(ch, descGroupLagSum, float64(lagSum), g.Group, t.Topic)
			}
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
