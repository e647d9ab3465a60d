package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// OAUTHBEARER (KIP-255, KIP-768): the settings of a listener's token
// validator, resolved from Kafka's sasl.oauthbearer.* settings (broker-wide,
// or listener.name.<l>.oauthbearer.<setting>) and the listener's
// listener.name.<l>.oauthbearer.sasl.server.callback.handler.class.
//
// Kafka picks its unsecured validator (alg "none" tokens, anyone may claim
// any principal) when no server callback handler is set. samsa does not:
// with OAUTHBEARER enabled it refuses to start until the handler class names
// either the JWT validator (OAuthBearerValidatorCallbackHandler, which needs
// sasl.oauthbearer.jwks.endpoint.url) or, explicitly, the unsecured one.
// As Kafka 4.4's BrokerJwtValidator, the JWT validator also wants
// sasl.oauthbearer.expected.audience and sasl.oauthbearer.expected.issuer
// unless sasl.oauthbearer.allow.unverified.audience / .issuer are true.

// Kafka's OAUTHBEARER class names.
const (
	OAuthBearerLoginModule       = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	OAuthValidatorHandler        = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	OAuthUnsecuredValidatorClass = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
)

// OAuthSettings configure a listener's OAUTHBEARER token validation.
type OAuthSettings struct {
	// Unsecured selects Kafka's unsecured validator: tokens are unsigned
	// JWS (alg "none"), for development only.
	Unsecured bool

	// JWKSURL is sasl.oauthbearer.jwks.endpoint.url: https:// (or http://)
	// fetched and refreshed every JWKSRefreshMs, or file: read and re-read
	// as often.
	JWKSURL       string
	JWKSRefreshMs int64
	// JWKSRetryBackoffMaxMs is sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms:
	// how long after a failed fetch the next one waits. (Kafka also has
	// .retry.backoff.ms, the first of its growing backoffs; samsa accepts
	// it and always waits this maximum.)
	JWKSRetryBackoffMaxMs int64
	// ExpectedAudience is sasl.oauthbearer.expected.audience (any one of
	// them must be in the token's aud); empty with AllowUnverifiedAudience.
	ExpectedAudience        []string
	AllowUnverifiedAudience bool
	// ExpectedIssuer is sasl.oauthbearer.expected.issuer.
	ExpectedIssuer        string
	AllowUnverifiedIssuer bool
	// SubClaim and ScopeClaim are sasl.oauthbearer.sub.claim.name and
	// sasl.oauthbearer.scope.claim.name.
	SubClaim   string
	ScopeClaim string
	// ClockSkewSeconds is sasl.oauthbearer.clock.skew.seconds.
	ClockSkewSeconds int64
	// JWKSTrust are the PEM certificates (or a truststore file) the JWKS
	// client trusts besides the system roots: the ssl.truststore.* options
	// of the listener's OAuthBearerLoginModule JAAS entry, as Kafka's
	// JaasOptionsUtils reads them.
	JWKSTruststoreLocation string
	JWKSTruststoreType     string
	JWKSTruststorePassword string
	JWKSTruststoreCerts    string

	// The unsecured validator's JAAS options: unsecuredValidatorPrincipalClaimName,
	// unsecuredValidatorScopeClaimName, unsecuredValidatorRequiredScope and
	// unsecuredValidatorAllowableClockSkewMs.
	UnsecuredPrincipalClaim string
	UnsecuredScopeClaim     string
	UnsecuredRequiredScope  []string
	UnsecuredClockSkewMs    int64
}

// oauthKeys are Kafka's broker-side sasl.oauthbearer.* settings samsa
// implements. The client-side ones (token endpoint, client credentials) are
// in oauthClientKeys: a broker ignores them.
var oauthKeys = map[string]bool{
	"sasl.oauthbearer.jwks.endpoint.url":                  true,
	"sasl.oauthbearer.jwks.endpoint.refresh.ms":           true,
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms":     true,
	"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms": true,
	"sasl.oauthbearer.expected.audience":                  true,
	"sasl.oauthbearer.expected.issuer":                    true,
	"sasl.oauthbearer.allow.unverified.audience":          true,
	"sasl.oauthbearer.allow.unverified.issuer":            true,
	"sasl.oauthbearer.sub.claim.name":                     true,
	"sasl.oauthbearer.scope.claim.name":                   true,
	"sasl.oauthbearer.clock.skew.seconds":                 true,
}

// oauthLookup finds a listener's OAUTHBEARER setting:
// listener.name.<l>.oauthbearer.<key>, then listener.name.<l>.<key>, then
// <key>.
func oauthLookup(g securityLookup, listener, key string) (string, givenSetting, bool) {
	pk := "listener.name." + strings.ToLower(listener) + ".oauthbearer." + key
	if v, ok := g[pk]; ok {
		return pk, v, true
	}
	return g.get(listener, key)
}

func oauthSettings(g securityLookup, listener string, jaas []JAASEntry) (*OAuthSettings, error) {
	str := func(key, dflt string) string {
		if _, v, ok := oauthLookup(g, listener, key); ok {
			return strings.TrimSpace(v.value)
		}
		return dflt
	}
	num := func(key string, dflt int64) (int64, error) {
		k, v, ok := oauthLookup(g, listener, key)
		if !ok {
			return dflt, nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v.value), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w for %s=%q (%s): want a non-negative number", ErrInvalidValue, k, v.value, v.where)
		}
		return n, nil
	}
	boolean := func(key string) (bool, error) {
		k, v, ok := oauthLookup(g, listener, key)
		if !ok {
			return false, nil
		}
		switch strings.ToLower(strings.TrimSpace(v.value)) {
		case "true":
			return true, nil
		case "false", "":
			return false, nil
		}
		return false, fmt.Errorf("%w for %s=%q (%s): want true or false", ErrInvalidValue, k, v.value, v.where)
	}
	o := &OAuthSettings{
		JWKSURL:        str("sasl.oauthbearer.jwks.endpoint.url", ""),
		ExpectedIssuer: str("sasl.oauthbearer.expected.issuer", ""),
		SubClaim:       str("sasl.oauthbearer.sub.claim.name", "sub"),
		ScopeClaim:     str("sasl.oauthbearer.scope.claim.name", "scope"),
	}
	o.ExpectedAudience = parseList(str("sasl.oauthbearer.expected.audience", ""))
	var err error
	if o.JWKSRefreshMs, err = num("sasl.oauthbearer.jwks.endpoint.refresh.ms", 3_600_000); err != nil {
		return nil, err
	}
	if o.JWKSRetryBackoffMaxMs, err = num("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", 10_000); err != nil {
		return nil, err
	}
	if _, err = num("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", 100); err != nil {
		return nil, err
	}
	if o.ClockSkewSeconds, err = num("sasl.oauthbearer.clock.skew.seconds", 30); err != nil {
		return nil, err
	}
	if o.AllowUnverifiedAudience, err = boolean("sasl.oauthbearer.allow.unverified.audience"); err != nil {
		return nil, err
	}
	if o.AllowUnverifiedIssuer, err = boolean("sasl.oauthbearer.allow.unverified.issuer"); err != nil {
		return nil, err
	}
	for _, e := range jaas {
		if e.Module != OAuthBearerLoginModule {
			continue
		}
		opt := e.Options
		o.JWKSTruststoreLocation = opt["ssl.truststore.location"]
		o.JWKSTruststoreType = strings.ToUpper(opt["ssl.truststore.type"])
		o.JWKSTruststorePassword = opt["ssl.truststore.password"]
		o.JWKSTruststoreCerts = opt["ssl.truststore.certificates"]
		o.UnsecuredPrincipalClaim = opt["unsecuredValidatorPrincipalClaimName"]
		o.UnsecuredScopeClaim = opt["unsecuredValidatorScopeClaimName"]
		if scope := strings.Fields(strings.ReplaceAll(opt["unsecuredValidatorRequiredScope"], ",", " ")); len(scope) > 0 {
			o.UnsecuredRequiredScope = scope
		}
		if s := opt["unsecuredValidatorAllowableClockSkewMs"]; s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w: listener %s: OAuthBearerLoginModule option unsecuredValidatorAllowableClockSkewMs=%q: want a non-negative number", ErrInvalidValue, listener, s)
			}
			o.UnsecuredClockSkewMs = n
		}
	}
	if o.UnsecuredPrincipalClaim == "" {
		o.UnsecuredPrincipalClaim = "sub"
	}
	if o.UnsecuredScopeClaim == "" {
		o.UnsecuredScopeClaim = "scope"
	}

	lname := strings.ToLower(listener)
	classKey := "listener.name." + lname + ".oauthbearer.sasl.server.callback.handler.class"
	cv, hasClass := g[classKey]
	class := strings.TrimSpace(cv.value)
	switch {
	case !hasClass || class == "":
		if !hasClass {
			cv.where = "not set"
		}
		return nil, refuse(classKey, cv, fmt.Sprintf("OAUTHBEARER is enabled on listener %s, and without a server callback handler Kafka would accept unsigned tokens claiming any principal; set it to %s with sasl.oauthbearer.jwks.endpoint.url to validate JWTs, or to %s to accept unsigned development tokens on purpose",
			listener, OAuthValidatorHandler, OAuthUnsecuredValidatorClass))
	case class == OAuthUnsecuredValidatorClass:
		o.Unsecured = true
		return o, nil
	case class != OAuthValidatorHandler:
		return nil, refuse(classKey, cv, "samsa cannot load a custom server callback handler; it implements "+OAuthValidatorHandler+" and "+OAuthUnsecuredValidatorClass)
	}
	if o.JWKSURL == "" {
		return nil, fmt.Errorf("%w: listener %s validates OAUTHBEARER tokens with %s but sasl.oauthbearer.jwks.endpoint.url (or listener.name.%s.oauthbearer.sasl.oauthbearer.jwks.endpoint.url) is not set",
			ErrInvalid, listener, OAuthValidatorHandler, lname)
	}
	u, err := url.Parse(o.JWKSURL)
	if err != nil || !(u.Scheme == "https" || u.Scheme == "http" || u.Scheme == "file") {
		k, v, _ := oauthLookup(g, listener, "sasl.oauthbearer.jwks.endpoint.url")
		return nil, fmt.Errorf("%w for %s=%q (%s): want an https://, http:// or file: URL", ErrInvalidValue, k, v.value, v.where)
	}
	if len(o.ExpectedAudience) == 0 && !o.AllowUnverifiedAudience {
		return nil, fmt.Errorf("%w: listener %s: the OAuth validator needs sasl.oauthbearer.expected.audience so that the token's audience (aud) can be checked; set it to the audience(s) of this cluster, or set sasl.oauthbearer.allow.unverified.audience=true to accept any (as Kafka 4.4)",
			ErrInvalid, listener)
	}
	if o.ExpectedIssuer == "" && !o.AllowUnverifiedIssuer {
		return nil, fmt.Errorf("%w: listener %s: the OAuth validator needs sasl.oauthbearer.expected.issuer so that the token's issuer (iss) can be checked; set it to the issuer URL of the provider, or set sasl.oauthbearer.allow.unverified.issuer=true to accept any (as Kafka 4.4)",
			ErrInvalid, listener)
	}
	return o, nil
}

// JWKSFilePath returns the path of a file: JWKS URL.
func (o *OAuthSettings) JWKSFilePath() (string, bool) {
	u, err := url.Parse(o.JWKSURL)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	if u.Path != "" {
		return u.Path, true
	}
	return u.Opaque, true
}
