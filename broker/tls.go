package broker

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/samsa-broker/samsa/config"
)

// TLS for SSL and SASL_SSL listeners, from Kafka's ssl.* settings.
//
// Keystores and truststores are PEM: files (ssl.keystore.location with
// ssl.keystore.type=PEM, or a file that starts with "-----BEGIN") or inline
// values (ssl.keystore.certificate.chain and ssl.keystore.key,
// ssl.truststore.certificates), PKCS#12 files (keystore.go) or JKS files
// (keystore_jks.go). A connection on
// a TLS listener is a *tls.Conn, nothing else, so that code that picks a
// transport by type (sendfile on a *net.TCPConn) sees it is encrypted.

// errTLSConfig marks a TLS setting that cannot be used.
var errTLSConfig = errors.New("broker: TLS configuration")

// serverTLSConfig builds the server side of a listener's TLS.
func serverTLSConfig(listener string, t *config.TLSSettings) (*tls.Config, error) {
	cert, err := loadKeystore(t)
	if err != nil {
		return nil, fmt.Errorf("%w: listener %s: %w", errTLSConfig, listener, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}}
	if err := applyProtocols(tc, t); err != nil {
		return nil, fmt.Errorf("%w: listener %s: %w", errTLSConfig, listener, err)
	}
	pool, err := loadTruststore(t)
	if err != nil {
		return nil, fmt.Errorf("%w: listener %s: %w", errTLSConfig, listener, err)
	}
	tc.ClientCAs = pool // nil: the system roots, as the JVM's default truststore
	switch t.ClientAuth {
	case "required":
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	case "requested":
		tc.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		tc.ClientAuth = tls.NoClientCert
	}
	return tc, nil
}

// clientTLSConfig builds the TLS this broker uses to connect to a listener
// of another broker (inter-broker traffic): the listener's truststore to
// check the server, its keystore as the client certificate, and the host
// name checked when ssl.endpoint.identification.algorithm is https.
func clientTLSConfig(listener string, t *config.TLSSettings) (*tls.Config, error) {
	tc := &tls.Config{}
	if err := applyProtocols(tc, t); err != nil {
		return nil, fmt.Errorf("%w: listener %s: %w", errTLSConfig, listener, err)
	}
	pool, err := loadTruststore(t)
	if err != nil {
		return nil, fmt.Errorf("%w: listener %s: %w", errTLSConfig, listener, err)
	}
	tc.RootCAs = pool
	if cert, err := loadKeystore(t); err == nil {
		tc.Certificates = []tls.Certificate{cert}
	}
	if t.EndpointIdentification != "https" {
		// Verify the chain but not the host name, as Kafka with an empty
		// ssl.endpoint.identification.algorithm.
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("%w: server sent no certificate", errTLSConfig)
			}
			opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return tc, nil
}

// tlsVersions maps ssl.enabled.protocols names to Go's versions.
var tlsVersions = map[string]uint16{
	"TLSv1": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11, "TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// applyProtocols sets the version range from ssl.enabled.protocols and the
// TLS 1.2 cipher suites from ssl.cipher.suites. Go cannot enable a set of
// versions with holes, so the range spans the lowest to the highest given.
// TLS 1.3 suites are not configurable in Go; their names are accepted.
func applyProtocols(tc *tls.Config, t *config.TLSSettings) error {
	for _, p := range t.EnabledProtocols {
		v, ok := tlsVersions[p]
		if !ok {
			return fmt.Errorf("ssl.enabled.protocols: unknown protocol %s", p)
		}
		if tc.MinVersion == 0 || v < tc.MinVersion {
			tc.MinVersion = v
		}
		if v > tc.MaxVersion {
			tc.MaxVersion = v
		}
	}
	if len(t.CipherSuites) == 0 {
		return nil
	}
	byName := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		byName[s.Name] = s.ID
	}
	for _, name := range t.CipherSuites {
		if strings.HasPrefix(name, "TLS_AES_") || strings.HasPrefix(name, "TLS_CHACHA20_") {
			continue // TLS 1.3
		}
		id, ok := byName[name]
		if !ok {
			return fmt.Errorf("ssl.cipher.suites: unknown or unsupported cipher suite %s", name)
		}
		tc.CipherSuites = append(tc.CipherSuites, id)
	}
	return nil
}

// storeKind tells how to read a keystore or truststore: by its type
// setting, or, when that is not given, by sniffing its bytes. JKS and
// PKCS12 each read either format, as the JDK's keystore.type.compat mode
// (on by default) lets Kafka do.
func storeKind(typ string, data []byte) string {
	switch typ {
	case "PEM":
		return typ
	case "PKCS12", "JKS":
		if isJKS(data) {
			return "JKS"
		}
		return "PKCS12"
	}
	switch {
	case bytes.Contains(data[:min(len(data), 4096)], []byte("-----BEGIN")):
		return "PEM"
	case isJKS(data):
		return "JKS"
	}
	return "PKCS12"
}

// loadKeystore returns the broker's certificate chain and private key.
func loadKeystore(t *config.TLSSettings) (tls.Certificate, error) {
	if t.KeystoreCertificateChain != "" {
		return pemKeyPair([]byte(t.KeystoreCertificateChain), []byte(t.KeystoreKey), t.KeyPassword)
	}
	if t.KeystoreLocation == "" {
		return tls.Certificate{}, errors.New("no keystore (ssl.keystore.location)")
	}
	data, err := os.ReadFile(t.KeystoreLocation)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	switch storeKind(t.KeystoreType, data) {
	case "PEM":
		return pemKeyPair(data, data, t.KeyPassword)
	case "JKS":
		cert, err := jksKeyPair(data, t.KeystorePassword, t.KeyPassword)
		if err != nil {
			return cert, fmt.Errorf("ssl.keystore.location %s: %w", t.KeystoreLocation, err)
		}
		return cert, nil
	default:
		return pkcs12KeyPair(data, t.KeystorePassword, t.KeyPassword)
	}
}

// loadTruststore returns the certificates to trust, or nil for the system
// roots when no truststore is given.
func loadTruststore(t *config.TLSSettings) (*x509.CertPool, error) {
	var data []byte
	kind := "PEM"
	switch {
	case t.TruststoreCertificates != "":
		data = []byte(t.TruststoreCertificates)
	case t.TruststoreLocation != "":
		var err error
		if data, err = os.ReadFile(t.TruststoreLocation); err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		kind = storeKind(t.TruststoreType, data)
	default:
		return nil, nil
	}
	var certs []*x509.Certificate
	switch kind {
	case "PEM":
		var err error
		if certs, err = pemCertificates(data); err != nil {
			return nil, fmt.Errorf("truststore: %w", err)
		}
	case "JKS":
		var err error
		if certs, err = jksCertificates(data, t.TruststorePassword); err != nil {
			return nil, fmt.Errorf("ssl.truststore.location %s: %w", t.TruststoreLocation, err)
		}
	default:
		var err error
		if certs, err = pkcs12Certificates(data, t.TruststorePassword); err != nil {
			return nil, fmt.Errorf("ssl.truststore.location %s: %w", t.TruststoreLocation, err)
		}
	}
	if len(certs) == 0 {
		return nil, errors.New("truststore holds no certificate")
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return certs, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
}

// pemKeyPair reads the certificates of chainPEM and the private key of
// keyPEM, which may be an encrypted PKCS#8 key (ENCRYPTED PRIVATE KEY,
// decrypted with ssl.key.password) as Kafka allows.
func pemKeyPair(chainPEM, keyPEM []byte, keyPassword string) (tls.Certificate, error) {
	var cert tls.Certificate
	certs, err := pemCertificates(chainPEM)
	if err != nil {
		return cert, fmt.Errorf("keystore certificate: %w", err)
	}
	if len(certs) == 0 {
		return cert, errors.New("keystore holds no certificate")
	}
	for _, c := range certs {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	cert.Leaf = certs[0]
	rest := keyPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return cert, errors.New("keystore holds no private key")
		}
		var der []byte
		switch b.Type {
		case "PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY":
			der = b.Bytes
		case "ENCRYPTED PRIVATE KEY":
			if keyPassword == "" {
				return cert, errors.New("the private key is encrypted but ssl.key.password is not set")
			}
			if der, err = decryptPKCS8(b.Bytes, []byte(keyPassword)); err != nil {
				return cert, fmt.Errorf("decrypting the private key: %w", err)
			}
		default:
			continue
		}
		key, err := parsePrivateKey(der)
		if err != nil {
			return cert, err
		}
		cert.PrivateKey = key
		if err := checkKeyMatches(cert.Leaf, key); err != nil {
			return cert, err
		}
		return cert, nil
	}
}

func parsePrivateKey(der []byte) (any, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("unknown private key format")
}

// checkKeyMatches refuses a key that is not the certificate's.
func checkKeyMatches(leaf *x509.Certificate, key any) error {
	pub, ok := key.(crypto.Signer)
	if !ok {
		return errors.New("private key of unknown type")
	}
	eq, ok := pub.Public().(interface{ Equal(x crypto.PublicKey) bool })
	if !ok || !eq.Equal(leaf.PublicKey) {
		return errors.New("the private key does not match the certificate")
	}
	return nil
}

// tlsPrincipal is the principal of a TLS client, as Kafka's
// DefaultKafkaPrincipalBuilder: "User:" and the subject distinguished
// name of its certificate mapped by ssl.principal.mapping.rules, or
// User:ANONYMOUS without a certificate.
func tlsPrincipal(cs tls.ConnectionState, rules []config.PrincipalMappingRule) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return anonymous, nil
	}
	name, err := config.MapPrincipal(rules, cs.PeerCertificates[0].Subject.String())
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}

// anonymous is Kafka's principal of unauthenticated connections.
const anonymous = "User:ANONYMOUS"
