package replica

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kgoTransport is the default FetchFunc: one kgo client per leader,
// seeded with that broker's address (from Options.BrokerAddr or the
// newest image), its requests sent straight to the seed broker.
type kgoTransport struct {
	m  *Manager
	mu struct {
		sync.Mutex
		clients map[int32]kgoClient
	}
}

type kgoClient struct {
	addr string
	cl   *kgo.Client
}

func newKgoTransport(m *Manager) *kgoTransport {
	t := &kgoTransport{m: m}
	t.mu.clients = map[int32]kgoClient{}
	return t
}

func (t *kgoTransport) addr(id int32) (string, bool) {
	if t.m.opts.BrokerAddr != nil {
		return t.m.opts.BrokerAddr(id)
	}
	img := t.m.Image()
	if img == nil {
		return "", false
	}
	b, ok := img.Brokers[id]
	if !ok || b.Port <= 0 {
		return "", false
	}
	return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true
}

func (t *kgoTransport) client(id int32) (*kgo.Client, error) {
	addr, ok := t.addr(id)
	if !ok {
		return nil, fmt.Errorf("replica: no address for broker %d", id)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.mu.clients[id]; ok {
		if c.addr == addr {
			return c.cl, nil
		}
		c.cl.Close()
		delete(t.mu.clients, id)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("samsa-replica-fetcher-"+strconv.Itoa(int(t.m.opts.NodeID))))
	if err != nil {
		return nil, fmt.Errorf("replica: client for broker %d: %w", id, err)
	}
	t.mu.clients[id] = kgoClient{addr: addr, cl: cl}
	return cl, nil
}

func (t *kgoTransport) fetch(ctx context.Context, leader int32, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	cl, err := t.client(leader)
	if err != nil {
		return nil, err
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return nil, fmt.Errorf("replica: no seed broker for %d", leader)
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.FetchResponse), nil
}

func (t *kgoTransport) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, c := range t.mu.clients {
		c.cl.Close()
		delete(t.mu.clients, id)
	}
}
