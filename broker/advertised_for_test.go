package broker

import (
	"strconv"
	"testing"
)

// TestAdvertisedFor: each client listener has its own advertised address
// (the start-up line printed the inter-broker one for every listener).
func TestAdvertisedFor(t *testing.T) {
	n := startTestNode(t, t.TempDir(),
		"listeners=PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
		"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
		"inter.broker.listener.name=INTERNAL",
		"advertised.listeners=PLAINTEXT://outside.example:19092,INTERNAL://inside.example:29092")
	defer closeTestNode(t, n)
	for name, want := range map[string]string{"PLAINTEXT": "outside.example:19092", "INTERNAL": "inside.example:29092"} {
		l, ok := n.AdvertisedFor(name)
		if !ok || l.Host+":"+strconv.Itoa(l.Port) != want {
			t.Errorf("AdvertisedFor(%s) = %+v, %v; want %s", name, l, ok, want)
		}
	}
	if l, ok := n.AdvertisedFor("CONTROLLER"); ok {
		t.Errorf("AdvertisedFor(CONTROLLER) = %+v; want none", l)
	}
}
