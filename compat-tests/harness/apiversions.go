package harness

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Advertises reports whether the broker cl talks to lists API key in its
// ApiVersions answer.
func Advertises(ctx context.Context, cl *kgo.Client, key kmsg.Key) (bool, error) {
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return false, fmt.Errorf("harness: ApiVersions: %w", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key.Int16() {
			return true, nil
		}
	}
	return false, nil
}

// AdvertisesAt is Advertises with a client of its own for the broker at
// addr.
func AdvertisesAt(ctx context.Context, addr string, key kmsg.Key) (bool, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return false, fmt.Errorf("harness: client for %s: %w", addr, err)
	}
	defer cl.Close()
	return Advertises(ctx, cl, key)
}
