package broker

import (
	"bytes"
	"crypto/sha1"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
)

// JKS keystores and truststores, the JDK's own format (sun.security.provider
// JavaKeyStore), read with the standard library:
//
//	magic 0xFEEDFEED, version (1 or 2), entry count, then per entry a tag,
//	an alias (Java modified UTF-8 with a 2-byte length), a date (8 bytes)
//	and:
//	  tag 1, private key: an EncryptedPrivateKeyInfo (4-byte length) and
//	         the certificate chain (a count, then per certificate its type
//	         name in version 2 and the DER with a 4-byte length);
//	  tag 2, trusted certificate: one certificate as in a chain;
//	and last a SHA-1 of the password (UTF-16BE), "Mighty Aphrodite" and
//	every byte before it.
//
// The private key is protected by Sun's key protector (OID
// 1.3.6.1.4.1.42.2.17.1.1): the encrypted data is a 20-byte salt, the
// PKCS#8 key XORed with the keystream SHA-1(password‖salt),
// SHA-1(password‖previous block), ..., and a 20-byte SHA-1 of
// password‖key that tells a wrong password. Every length read is checked
// against the bytes left before anything is allocated, so a hostile file
// costs at most its own size.

// errJKS marks a JKS store samsa cannot read.
var errJKS = errors.New("broker: JKS")

var (
	// errJKSBadPassword is a store whose integrity check fails.
	errJKSBadPassword = fmt.Errorf("%w: wrong password (the store's integrity check fails)", errJKS)
	// errJKSBadKeyPassword is a private key whose check fails.
	errJKSBadKeyPassword = fmt.Errorf("%w: wrong key password (the private key's check fails)", errJKS)
	// errJKSMalformed is a store that does not parse.
	errJKSMalformed = fmt.Errorf("%w: malformed store", errJKS)
	// errJKSUnsupported is a well-formed store samsa does not read.
	errJKSUnsupported = fmt.Errorf("%w: unsupported", errJKS)
)

// oidJKSKeyProtector is Sun's proprietary key protection algorithm.
var oidJKSKeyProtector = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 42, 2, 17, 1, 1}

const (
	jksMagic      = 0xFEEDFEED
	jksPrivateKey = 1
	jksTrusted    = 2
	jksDigestSize = sha1.Size
)

// jksKeyEntry is a private key entry as stored: the protected key and the
// certificate chain, leaf first.
type jksKeyEntry struct {
	alias     string
	protected []byte
	chain     []*x509.Certificate
}

// jksStore is a parsed JKS file.
type jksStore struct {
	keys    []jksKeyEntry
	trusted []*x509.Certificate
}

// jksReader reads big-endian fields of a JKS file, failing on any read
// past its end.
type jksReader struct {
	data []byte
	off  int
}

func (r *jksReader) take(n int) ([]byte, error) {
	if n < 0 || n > len(r.data)-r.off {
		return nil, fmt.Errorf("%w: field of %d bytes at offset %d runs past the end", errJKSMalformed, n, r.off)
	}
	b := r.data[r.off : r.off+n]
	r.off += n
	return b, nil
}

func (r *jksReader) u16() (int, error) {
	b, err := r.take(2)
	if err != nil {
		return 0, err
	}
	return int(binary.BigEndian.Uint16(b)), nil
}

func (r *jksReader) u32() (uint32, error) {
	b, err := r.take(4)
	if err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b), nil
}

// bytes32 reads a field with a 4-byte length.
func (r *jksReader) bytes32() ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if uint64(n) > uint64(len(r.data)-r.off) {
		return nil, fmt.Errorf("%w: field of %d bytes at offset %d runs past the end", errJKSMalformed, n, r.off)
	}
	return r.take(int(n))
}

// utf reads a Java DataOutput.writeUTF string. Aliases are only used in
// messages, so the modified UTF-8 is kept as it is.
func (r *jksReader) utf() (string, error) {
	n, err := r.u16()
	if err != nil {
		return "", err
	}
	b, err := r.take(n)
	return string(b), err
}

// certificate reads one certificate: its type name (version 2) and DER.
func (r *jksReader) certificate(version uint32) (*x509.Certificate, error) {
	if version == 2 {
		typ, err := r.utf()
		if err != nil {
			return nil, err
		}
		if typ != "X.509" {
			return nil, fmt.Errorf("%w: certificate type %q", errJKSUnsupported, typ)
		}
	}
	der, err := r.bytes32()
	if err != nil {
		return nil, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate: %v", errJKSMalformed, err)
	}
	return c, nil
}

// jksPassword is a password as the JDK feeds it to its digests: each
// UTF-16 code unit big-endian.
func jksPassword(pw string) []byte {
	units := utf16.Encode([]rune(pw))
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		b = append(b, byte(u>>8), byte(u))
	}
	return b
}

// isJKS tells whether data starts with the JKS magic number.
func isJKS(data []byte) bool {
	return len(data) >= 4 && binary.BigEndian.Uint32(data) == jksMagic
}

// parseJKS reads a JKS store. With a password the store's integrity is
// checked first (errJKSBadPassword when it fails); with "" it is not, as
// the JDK's KeyStore.load with a null password.
func parseJKS(data []byte, password string) (*jksStore, error) {
	if len(data) < 12+jksDigestSize {
		return nil, fmt.Errorf("%w: %d bytes is too short", errJKSMalformed, len(data))
	}
	if !isJKS(data) {
		return nil, fmt.Errorf("%w: not a JKS store (bad magic number)", errJKSMalformed)
	}
	body, sum := data[:len(data)-jksDigestSize], data[len(data)-jksDigestSize:]
	if password != "" {
		h := sha1.New()
		h.Write(jksPassword(password))
		h.Write([]byte("Mighty Aphrodite"))
		h.Write(body)
		if subtle.ConstantTimeCompare(h.Sum(nil), sum) != 1 {
			return nil, errJKSBadPassword
		}
	}
	r := &jksReader{data: body, off: 4}
	version, _ := r.u32()
	if version != 1 && version != 2 {
		return nil, fmt.Errorf("%w: version %d", errJKSUnsupported, version)
	}
	count, _ := r.u32()
	store := &jksStore{}
	// count is not trusted for any allocation: each entry is read from
	// the bytes there are, and the loop ends at the first that is missing.
	for i := uint32(0); i < count; i++ {
		tag, err := r.u32()
		if err != nil {
			return nil, err
		}
		alias, err := r.utf()
		if err != nil {
			return nil, err
		}
		if _, err := r.take(8); err != nil { // creation date
			return nil, err
		}
		switch tag {
		case jksPrivateKey:
			e := jksKeyEntry{alias: alias}
			if e.protected, err = r.bytes32(); err != nil {
				return nil, err
			}
			n, err := r.u32()
			if err != nil {
				return nil, err
			}
			for j := uint32(0); j < n; j++ {
				c, err := r.certificate(version)
				if err != nil {
					return nil, fmt.Errorf("entry %q: %w", alias, err)
				}
				e.chain = append(e.chain, c)
			}
			store.keys = append(store.keys, e)
		case jksTrusted:
			c, err := r.certificate(version)
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", alias, err)
			}
			store.trusted = append(store.trusted, c)
		case 3:
			return nil, fmt.Errorf("%w: entry %q is a secret key (a JCEKS store?)", errJKSUnsupported, alias)
		default:
			return nil, fmt.Errorf("%w: entry %q has unknown tag %d", errJKSMalformed, alias, tag)
		}
	}
	if r.off != len(body) {
		return nil, fmt.Errorf("%w: %d bytes after the last entry", errJKSMalformed, len(body)-r.off)
	}
	return store, nil
}

// jksEncryptedKey is a PKCS#8 EncryptedPrivateKeyInfo.
type jksEncryptedKey struct {
	Algorithm     pkix.AlgorithmIdentifier
	EncryptedData []byte
}

// recoverJKSKey undoes Sun's key protector and returns the PKCS#8 key.
func recoverJKSKey(protected []byte, password string) ([]byte, error) {
	var info jksEncryptedKey
	rest, err := asn1.Unmarshal(protected, &info)
	if err != nil || len(rest) != 0 {
		return nil, fmt.Errorf("%w: encrypted private key: %v", errJKSMalformed, err)
	}
	if !info.Algorithm.Algorithm.Equal(oidJKSKeyProtector) {
		return nil, fmt.Errorf("%w: key protection %v", errJKSUnsupported, info.Algorithm.Algorithm)
	}
	enc := info.EncryptedData
	if len(enc) < 2*jksDigestSize {
		return nil, fmt.Errorf("%w: encrypted private key of %d bytes", errJKSMalformed, len(enc))
	}
	salt, body, check := enc[:jksDigestSize], enc[jksDigestSize:len(enc)-jksDigestSize], enc[len(enc)-jksDigestSize:]
	pw := jksPassword(password)
	key := make([]byte, len(body))
	block := salt
	for off := 0; off < len(body); off += jksDigestSize {
		h := sha1.New()
		h.Write(pw)
		h.Write(block)
		block = h.Sum(nil)
		for i := off; i < len(body) && i < off+jksDigestSize; i++ {
			key[i] = body[i] ^ block[i-off]
		}
	}
	h := sha1.New()
	h.Write(pw)
	h.Write(key)
	if subtle.ConstantTimeCompare(h.Sum(nil), check) != 1 {
		return nil, errJKSBadKeyPassword
	}
	return key, nil
}

// jksKeyPair reads the broker's key and certificate chain from a JKS
// keystore: the first private key entry (by file order; keytool writes
// one for a broker), its key decrypted with keyPassword, or with the store
// password when that is "" as Kafka does.
func jksKeyPair(data []byte, storePassword, keyPassword string) (tls.Certificate, error) {
	var cert tls.Certificate
	if storePassword == "" {
		return cert, fmt.Errorf("%w: a JKS keystore needs ssl.keystore.password", errJKS)
	}
	store, err := parseJKS(data, storePassword)
	if errors.Is(err, errJKSBadPassword) {
		return cert, fmt.Errorf("ssl.keystore.password: %w", err)
	}
	if err != nil {
		return cert, err
	}
	if len(store.keys) == 0 {
		return cert, fmt.Errorf("%w: the keystore holds no private key entry", errJKS)
	}
	e := store.keys[0]
	if len(e.chain) == 0 {
		return cert, fmt.Errorf("%w: private key entry %q has no certificate", errJKS, e.alias)
	}
	setting := "ssl.key.password"
	if keyPassword == "" {
		keyPassword, setting = storePassword, "ssl.key.password (unset, so ssl.keystore.password)"
	}
	der, err := recoverJKSKey(e.protected, keyPassword)
	if errors.Is(err, errJKSBadKeyPassword) {
		return cert, fmt.Errorf("%s: private key entry %q: %w", setting, e.alias, err)
	}
	if err != nil {
		return cert, fmt.Errorf("private key entry %q: %w", e.alias, err)
	}
	key, err := parsePrivateKey(der)
	if err != nil {
		return cert, fmt.Errorf("private key entry %q: %w", e.alias, err)
	}
	if err := checkKeyMatches(e.chain[0], key); err != nil {
		return cert, fmt.Errorf("private key entry %q: %w", e.alias, err)
	}
	for _, c := range e.chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	cert.Leaf = e.chain[0]
	cert.PrivateKey = key
	return cert, nil
}

// jksCertificates reads the certificates a JKS truststore trusts: its
// trusted certificate entries and, as the JDK's trust manager, the leaf
// certificates of its private key entries.
func jksCertificates(data []byte, password string) ([]*x509.Certificate, error) {
	store, err := parseJKS(data, password)
	if errors.Is(err, errJKSBadPassword) {
		return nil, fmt.Errorf("ssl.truststore.password: %w", err)
	}
	if err != nil {
		return nil, err
	}
	certs := store.trusted
	for _, e := range store.keys {
		if len(e.chain) > 0 && !containsCert(certs, e.chain[0]) {
			certs = append(certs, e.chain[0])
		}
	}
	return certs, nil
}

func containsCert(certs []*x509.Certificate, c *x509.Certificate) bool {
	for _, o := range certs {
		if bytes.Equal(o.Raw, c.Raw) {
			return true
		}
	}
	return false
}
