package config

// Delegation tokens (KIP-48): the delegation.token.* settings. Tokens are
// enabled when delegation.token.secret.key is set and not empty, as in
// Kafka 4.4 (DelegationTokenManagerConfigs.tokenAuthEnabled); the same key
// must be set on every node, since each node derives a token's HMAC (its
// SCRAM password) from it. Kafka 4.0 removed the older name
// delegation.token.master.key: Kafka 4.4 treats it as an unknown setting,
// and so does samsa (a warning; tokens stay disabled).

// DelegationTokens is the resolved delegation token configuration.
type DelegationTokens struct {
	// SecretKey is delegation.token.secret.key; empty: tokens are
	// disabled (DELEGATION_TOKEN_AUTH_DISABLED).
	SecretKey string
	// MaxLifetimeMs is delegation.token.max.lifetime.ms: no renewal
	// extends a token past its issue time plus this.
	MaxLifetimeMs int64
	// ExpiryTimeMs is delegation.token.expiry.time.ms: how long a token
	// is valid after its creation or renewal.
	ExpiryTimeMs int64
	// ExpiryCheckIntervalMs is delegation.token.expiry.check.interval.ms:
	// how often the active controller removes expired tokens.
	ExpiryCheckIntervalMs int64
}

// Enabled reports whether delegation tokens are enabled.
func (t DelegationTokens) Enabled() bool { return t.SecretKey != "" }

func decodeDelegationTokens(d *decoder) DelegationTokens {
	return DelegationTokens{
		SecretKey:             d.str("delegation.token.secret.key"),
		MaxLifetimeMs:         d.i64("delegation.token.max.lifetime.ms"),
		ExpiryTimeMs:          d.i64("delegation.token.expiry.time.ms"),
		ExpiryCheckIntervalMs: d.i64("delegation.token.expiry.check.interval.ms"),
	}
}
