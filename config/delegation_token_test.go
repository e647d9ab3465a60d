package config

import "testing"

// TestDelegationTokenSettings: the delegation.token.* settings with
// Kafka's defaults (7 days, 1 day, 1 hour), the secret enabling tokens,
// and Kafka's lower bound of 1 on the three durations.
func TestDelegationTokenSettings(t *testing.T) {
	c, err := Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := DelegationTokens{MaxLifetimeMs: 604800000, ExpiryTimeMs: 86400000, ExpiryCheckIntervalMs: 3600000}
	if c.DelegationTokens != want || c.DelegationTokens.Enabled() {
		t.Fatalf("defaults %+v", c.DelegationTokens)
	}
	c, err = Load([]string{"--override", "delegation.token.secret.key=s3cret", "--override", "delegation.token.expiry.time.ms=1000"}, []string{"KAFKA_DELEGATION_TOKEN_MAX_LIFETIME_MS=5000"})
	if err != nil {
		t.Fatal(err)
	}
	want = DelegationTokens{SecretKey: "s3cret", MaxLifetimeMs: 5000, ExpiryTimeMs: 1000, ExpiryCheckIntervalMs: 3600000}
	if c.DelegationTokens != want || !c.DelegationTokens.Enabled() {
		t.Fatalf("set %+v", c.DelegationTokens)
	}
	for _, bad := range []string{"delegation.token.max.lifetime.ms=0", "delegation.token.expiry.time.ms=-1", "delegation.token.expiry.check.interval.ms=0"} {
		if _, err := Load([]string{"--override", bad}, nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
