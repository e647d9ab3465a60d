package broker

import (
	"testing"

	"github.com/samsa-broker/samsa/controller"
)

func TestDeletedTopicIDs(t *testing.T) {
	a, b, c := controller.Uuid{1}, controller.Uuid{2}, controller.Uuid{3}
	img := func(ids ...controller.Uuid) *controller.Image {
		m := map[controller.Uuid]*controller.Topic{}
		for _, id := range ids {
			m[id] = &controller.Topic{ID: id}
		}
		return &controller.Image{TopicsByID: m}
	}
	if got := deletedTopicIDs(nil, img(a)); got != nil {
		t.Errorf("first image: %v, want none", got)
	}
	if got := deletedTopicIDs(img(a, b), img(a, b, c)); got != nil {
		t.Errorf("a topic created: %v, want none", got)
	}
	got := deletedTopicIDs(img(a, b, c), img(b))
	if len(got) != 2 || !(got[0] == [16]byte(a) && got[1] == [16]byte(c) || got[0] == [16]byte(c) && got[1] == [16]byte(a)) {
		t.Errorf("a and c deleted: %v", got)
	}
}
