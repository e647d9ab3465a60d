package broker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/samsa-broker/samsa/config"
)

// Certificate reload and key-set refresh.
//
// A TLS listener's keystore and truststore files are watched: every
// securityReloadInterval the node's security loop fingerprints them
// (content hash), and when one changed it builds the listener's TLS again.
// New connections get the new certificate (the listener's tls.Config hands
// out the current one from GetConfigForClient); connections already open
// keep the session they negotiated. A change that does not load (a
// half-written file, a key that does not match its certificate) is logged
// and the previous certificate stays in use, as Kafka keeps its SSLFactory
// when a dynamic keystore update fails validation. Kafka itself re-reads
// the files only when told to (AlterConfigs of the listener's ssl.*
// settings); watching them lets a rotation by cert-manager or certbot take
// effect without that step.
//
// The keystore and truststore settings may also be changed at runtime
// (config/tls_dynamic.go): AlterConfigs validates the new keystore with
// validate, as Kafka's SslFactory does (it must load, and its certificate
// keep the subject and alternative names unless ssl.allow.dn.changes /
// ssl.allow.san.changes), and the security loop applies what the metadata
// image stores for this broker over the listener's static settings.
//
// The same loop refreshes each OAUTHBEARER listener's JWKS when it is due.

// securityReloadInterval is how often the files are checked.
const securityReloadInterval = 2 * time.Second

// tlsReloader holds a listener's current server TLS configuration.
type tlsReloader struct {
	listener string
	static   *config.TLSSettings // from the configuration
	current  atomic.Pointer[tls.Config]
	// client is the TLS this broker connects to the listener with (its
	// inter-broker connections, peer_dial.go), rebuilt with current.
	client atomic.Pointer[tls.Config]
	// settings are static with overrides (the dynamic settings stored
	// for this broker) applied; only the security loop changes them
	// after start.
	settings  *config.TLSSettings
	overrides map[string]string
	// fingerprint of the files the current configuration was built from;
	// only the security loop reads and writes it after start.
	fingerprint []byte
}

func newTLSReloader(listener string, t *config.TLSSettings) (*tlsReloader, error) {
	r := &tlsReloader{listener: listener, static: t, settings: t}
	r.fingerprint = r.fingerprintFiles()
	tc, err := serverTLSConfig(listener, t)
	if err != nil {
		return nil, err
	}
	r.current.Store(tc)
	r.storeClient(t)
	return r, nil
}

// storeClient rebuilds the client TLS of settings; on failure the previous
// one stays (the server side, built first, has reported the error).
func (r *tlsReloader) storeClient(settings *config.TLSSettings) {
	if c, err := clientTLSConfig(r.listener, settings); err == nil {
		r.client.Store(c)
	}
}

// config returns the tls.Config a listener serves with: each handshake
// takes the reloader's current configuration.
func (r *tlsReloader) config() *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return r.current.Load(), nil },
	}
}

// files are the keystore and truststore files the listener reads.
func (r *tlsReloader) files() []string {
	var out []string
	if r.settings.KeystoreCertificateChain == "" && r.settings.KeystoreLocation != "" {
		out = append(out, r.settings.KeystoreLocation)
	}
	if r.settings.TruststoreCertificates == "" && r.settings.TruststoreLocation != "" {
		out = append(out, r.settings.TruststoreLocation)
	}
	sort.Strings(out)
	return out
}

// fingerprintFiles hashes the files' contents (a missing file hashes as
// its error, so that its reappearance is a change).
func (r *tlsReloader) fingerprintFiles() []byte {
	h := sha256.New()
	for _, f := range r.files() {
		data, err := os.ReadFile(f)
		h.Write([]byte(f))
		if err != nil {
			h.Write([]byte(err.Error()))
			continue
		}
		h.Write(data)
	}
	return h.Sum(nil)
}

// reload builds the TLS configuration again if the files changed. It
// reports whether a new certificate is in use.
func (r *tlsReloader) reload(logger *slog.Logger) bool {
	fp := r.fingerprintFiles()
	if bytes.Equal(fp, r.fingerprint) {
		return false
	}
	r.fingerprint = fp
	tc, err := r.build(r.settings)
	if err != nil {
		logger.Warn("keystore or truststore changed but does not load; keeping the previous certificate", "listener", r.listener, "err", err)
		return false
	}
	r.current.Store(tc)
	r.storeClient(r.settings)
	logger.Info("reloaded the listener's keystore and truststore", "listener", r.listener)
	return true
}

// build makes the TLS configuration of settings and checks that its
// certificate may replace the current one.
func (r *tlsReloader) build(settings *config.TLSSettings) (*tls.Config, error) {
	tc, err := serverTLSConfig(r.listener, settings)
	if err != nil {
		return nil, err
	}
	if err := sameIdentity(leafOf(r.current.Load()), leafOf(tc), settings); err != nil {
		return nil, err
	}
	return tc, nil
}

// validate checks that overrides, the listener's dynamic TLS settings,
// give a keystore and truststore that load and may replace the current
// certificate.
func (r *tlsReloader) validate(overrides map[string]string) error {
	settings, err := r.static.WithOverrides(overrides)
	if err != nil {
		return err
	}
	_, err = r.build(settings)
	return err
}

// applyOverrides installs the dynamic TLS settings stored for this
// broker, when they changed. A stored value that no longer loads (a file
// removed since it was validated) is logged, and the previous
// configuration stays.
func (r *tlsReloader) applyOverrides(overrides map[string]string, logger *slog.Logger) {
	if maps.Equal(overrides, r.overrides) {
		return
	}
	r.overrides = maps.Clone(overrides)
	settings, err := r.static.WithOverrides(overrides)
	if err == nil {
		var tc *tls.Config
		if tc, err = r.build(settings); err == nil {
			r.settings = settings
			r.fingerprint = r.fingerprintFiles()
			r.current.Store(tc)
			r.storeClient(settings)
			logger.Info("applied the listener's dynamic TLS settings", "listener", r.listener)
			return
		}
	}
	logger.Warn("dynamic TLS settings do not load; keeping the previous certificate", "listener", r.listener, "err", err)
}

// leafOf is the certificate a TLS configuration serves.
func leafOf(tc *tls.Config) *x509.Certificate {
	if tc == nil || len(tc.Certificates) == 0 {
		return nil
	}
	c := tc.Certificates[0]
	if c.Leaf != nil {
		return c.Leaf
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}

// sameIdentity refuses a new certificate whose subject or alternative
// names differ from the old one's, unless ssl.allow.dn.changes or
// ssl.allow.san.changes, as Kafka's SslFactory validates a keystore
// update (a certificate for another host swapped in by mistake).
func sameIdentity(old, next *x509.Certificate, t *config.TLSSettings) error {
	if old == nil || next == nil {
		return nil
	}
	if !t.AllowDNChanges && !bytes.Equal(old.RawSubject, next.RawSubject) {
		return fmt.Errorf("%w: Keystore DistinguishedName does not match: existing %s, new %s", errTLSConfig, old.Subject, next.Subject)
	}
	if !t.AllowSANChanges && !slices.Equal(sanList(old), sanList(next)) {
		return fmt.Errorf("%w: Keystore SubjectAltName does not match: existing %v, new %v", errTLSConfig, sanList(old), sanList(next))
	}
	return nil
}

func sanList(c *x509.Certificate) []string {
	var out []string
	out = append(out, c.DNSNames...)
	out = append(out, c.EmailAddresses...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	for _, u := range c.URIs {
		out = append(out, u.String())
	}
	sort.Strings(out)
	return out
}

// runSecurityReload is the node's security loop: certificate reload and
// JWKS refresh, until ctx ends.
// overrides returns the dynamic TLS settings stored for this broker, by
// listener (nil: none).
func runSecurityReload(ctx context.Context, logger *slog.Logger, security func() map[string]*ListenerSecurity, overrides func() map[string]map[string]string) {
	t := time.NewTicker(securityReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			var dynamic map[string]map[string]string
			if overrides != nil {
				dynamic = overrides()
			}
			// Listeners come and go at runtime (listener_runtime.go):
			// the set is read at each tick.
			var reloaders []*tlsReloader
			var keySets []*jwksKeys
			for _, sec := range security() {
				if sec.reloader != nil {
					reloaders = append(reloaders, sec.reloader)
				}
				if sec.SASL != nil {
					if v, ok := sec.SASL.OAuth.(*jwtValidator); ok {
						keySets = append(keySets, v.set)
					}
				}
			}
			for _, r := range reloaders {
				r.applyOverrides(dynamic[r.listener], logger)
				r.reload(logger)
			}
			for _, k := range keySets {
				if err := k.refreshIfStale(ctx, now); err != nil {
					logger.Warn("OAUTHBEARER key set refresh failed; keeping the keys held", "err", err)
				}
			}
		}
	}
}

// validateListenerTLS checks the dynamic TLS settings of listener
// (handlers.Deps.ValidateListenerTLS).
func validateListenerTLS(security map[string]*ListenerSecurity, listener string, overrides map[string]string) error {
	sec := security[listener]
	if sec == nil || sec.reloader == nil {
		return fmt.Errorf("%w: listener %s does not use TLS", errTLSConfig, listener)
	}
	return sec.reloader.validate(overrides)
}

// tlsOverrides are the dynamic TLS settings the metadata image holds for
// this broker, by listener.
func (n *Node) tlsOverrides() map[string]map[string]string {
	img := n.ctrl.Image()
	if img == nil {
		return nil
	}
	return config.ListenerTLSOverrides(img.BrokerConfigs[strconv.Itoa(int(n.cfg.NodeID))])
}
