package broker

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/samsa-broker/samsa/controller"
)

// TestLogImageChanges: issue 17 asks for one log line per significant event
// (topic created/deleted, leadership and ISR changes). Each step below
// changes one thing and must produce exactly its line.
func TestLogImageChanges(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	step := func(prev, next *controller.Image, want ...string) {
		t.Helper()
		buf.Reset()
		logImageChanges(logger, 1, prev, next)
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if buf.Len() == 0 {
			lines = nil
		}
		if len(lines) != len(want) {
			t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), buf.String())
		}
		for i, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Fatalf("line %d = %q, want it to contain %q", i, lines[i], w)
			}
		}
	}
	img := func(brokers map[int32]controller.Broker, topics ...*controller.Topic) *controller.Image {
		im := controller.EmptyImage("c", 1)
		im.Brokers = brokers
		for _, tp := range topics {
			im.Topics[tp.Name] = tp
			im.TopicsByID[tp.ID] = tp
		}
		return im
	}
	brokers := map[int32]controller.Broker{1: {ID: 1, Host: "a", Port: 1}}
	empty := img(map[int32]controller.Broker{})
	b1 := img(brokers)
	step(empty, b1, `msg="broker registered" broker=1`)

	orders := &controller.Topic{Name: "orders", ID: controller.Uuid{1}, Partitions: []controller.Partition{
		{Partition: 0, Leader: 1, LeaderEpoch: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}},
		{Partition: 1, Leader: 3, LeaderEpoch: 0, Replicas: []int32{3, 4}, ISR: []int32{3, 4}},
	}}
	withOrders := img(brokers, orders)
	step(b1, withOrders, `msg="topic created" topic=orders topic_id=AQAAAAAAAAAAAAAAAAAAAA partitions=2 replication_factor=2`)
	// The same *Topic in both images: nothing to say.
	step(withOrders, img(brokers, orders))

	// Partition 0 (hosted here) changes leader, partition 1 (not hosted
	// here) too: only the first is logged.
	moved := &controller.Topic{Name: "orders", ID: orders.ID, Partitions: []controller.Partition{
		{Partition: 0, Leader: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{2}},
		{Partition: 1, Leader: 4, LeaderEpoch: 1, Replicas: []int32{3, 4}, ISR: []int32{4}},
	}}
	step(withOrders, img(brokers, moved), `msg="partition leader changed" topic=orders partition=0 leader=2 previous_leader=1 leader_epoch=1`)
	expanded := &controller.Topic{Name: "orders", ID: orders.ID, Partitions: []controller.Partition{
		{Partition: 0, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{2, 1}},
		moved.Partitions[1],
	}}
	step(img(brokers, moved), img(brokers, expanded), `msg="partition ISR changed" topic=orders partition=0 isr="[2 1]" previous_isr=[2]`)

	fenced := map[int32]controller.Broker{1: {ID: 1, Host: "a", Port: 1, Fenced: true}}
	step(img(brokers, expanded), img(fenced, expanded), `msg="broker fenced" broker=1`)
	step(img(fenced, expanded), img(brokers, expanded), `msg="broker unfenced" broker=1`)
	step(img(brokers, expanded), b1, `msg="topic deleted" topic=orders`)
	// Deleted and recreated under the same name in one step.
	again := &controller.Topic{Name: "orders", ID: controller.Uuid{2}, Partitions: orders.Partitions[:1]}
	step(withOrders, img(brokers, again), `msg="topic created" topic=orders`, `msg="topic deleted" topic=orders`)
}

// TestMetadataEventsQuietUntilServing: images replayed while the node starts
// are not logged again as new events.
func TestMetadataEventsQuietUntilServing(t *testing.T) {
	var buf bytes.Buffer
	e := &metadataEvents{logger: slog.New(slog.NewTextHandler(&buf, nil)), nodeID: 1}
	prev := controller.EmptyImage("c", 1)
	next := controller.EmptyImage("c", 1)
	next.Brokers = map[int32]controller.Broker{1: {ID: 1}}
	e.apply(prev, next)
	if buf.Len() != 0 {
		t.Fatalf("logged before serving: %s", buf.String())
	}
	e.on.Store(true)
	e.apply(prev, next)
	if !strings.Contains(buf.String(), "broker registered") {
		t.Fatalf("not logged once serving: %q", buf.String())
	}
}
