package broker

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
	"unicode/utf16"
)

// PKCS#12 keystores (RFC 7292) and encrypted PKCS#8 keys (RFC 5208/8018),
// as written by Java's keytool and by openssl: certificates and keys in
// SafeBags, encrypted with PBES2 (PBKDF2 with HMAC-SHA1/256/384/512, and
// AES-128/192/256-CBC or 3DES-CBC) or with the PKCS#12 PBE
// pbeWithSHAAnd3-KeyTripleDES-CBC, and the store's MAC (SHA-1/256/384/512)
// checked, so a wrong password is reported as such. RC2-40 (the
// certificate encryption of openssl 1.x and old keytool defaults) is not
// supported: re-export the store or use PEM.

// errPKCS12 marks a PKCS#12 store or encrypted key samsa cannot read.
var errPKCS12 = errors.New("broker: PKCS#12")

var (
	oidData                 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 1}
	oidEncryptedData        = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 7, 6}
	oidKeyBag               = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 1}
	oidShroudedKeyBag       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 2}
	oidCertBag              = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 10, 1, 3}
	oidX509Certificate      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 22, 1}
	oidPBES2                = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2               = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidPBEWithSHA3DES       = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 3}
	oidPBEWithSHARC2_40     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1, 6}
	oidHMACWithSHA1         = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACWithSHA256       = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACWithSHA384       = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACWithSHA512       = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC            = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC            = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC            = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidDESEDE3CBC           = asn1.ObjectIdentifier{1, 2, 840, 113549, 3, 7}
	oidSHA1                 = asn1.ObjectIdentifier{1, 3, 14, 3, 2, 26}
	oidSHA256               = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 1}
	oidSHA384               = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 2}
	oidSHA512               = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 2, 3}
	errPKCS12BadPassword    = fmt.Errorf("%w: wrong password (the store's integrity check fails)", errPKCS12)
	errPKCS12Unsupported    = fmt.Errorf("%w: unsupported algorithm", errPKCS12)
	errPKCS12DecryptPadding = fmt.Errorf("%w: decryption failed (wrong password?)", errPKCS12)
)

type pfx struct {
	Version  int
	AuthSafe contentInfo
	MacData  macData `asn1:"optional"`
}

type contentInfo struct {
	ContentType asn1.ObjectIdentifier
	Content     asn1.RawValue `asn1:"tag:0,explicit,optional"`
}

type macData struct {
	Mac        digestInfo
	MacSalt    []byte
	Iterations int `asn1:"optional,default:1"`
}

type digestInfo struct {
	Algorithm algorithmIdentifier
	Digest    []byte
}

type algorithmIdentifier struct {
	Algorithm  asn1.ObjectIdentifier
	Parameters asn1.RawValue `asn1:"optional"`
}

type encryptedData struct {
	Version              int
	EncryptedContentInfo encryptedContentInfo
}

type encryptedContentInfo struct {
	ContentType                asn1.ObjectIdentifier
	ContentEncryptionAlgorithm algorithmIdentifier
	EncryptedContent           asn1.RawValue `asn1:"tag:0,optional"`
}

type safeBag struct {
	ID         asn1.ObjectIdentifier
	Value      asn1.RawValue   `asn1:"tag:0,explicit"`
	Attributes []asn1.RawValue `asn1:"set,optional"`
}

type certBag struct {
	ID   asn1.ObjectIdentifier
	Data []byte `asn1:"tag:0,explicit"`
}

type encryptedPrivateKeyInfo struct {
	Algorithm     algorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc algorithmIdentifier
	EncryptionScheme  algorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                 `asn1:"optional"`
	PRF            algorithmIdentifier `asn1:"optional"`
}

type pbeParams struct {
	Salt       []byte
	Iterations int
}

// bmpPassword is a password as PKCS#12 key derivation wants it: UTF-16
// big-endian with a terminating NUL character.
func bmpPassword(pw string) []byte {
	if pw == "" {
		return nil
	}
	var out []byte
	for _, r := range utf16.Encode([]rune(pw)) {
		out = append(out, byte(r>>8), byte(r))
	}
	return append(out, 0, 0)
}

// pkcs12KDF is the PKCS#12 key derivation (RFC 7292 appendix B.2).
func pkcs12KDF(h func() hash.Hash, password, salt []byte, id byte, iterations, size int) []byte {
	u := h().Size()
	v := h().BlockSize()
	fill := func(src []byte) []byte {
		if len(src) == 0 {
			return nil
		}
		n := v * ((len(src) + v - 1) / v)
		out := make([]byte, n)
		for i := range out {
			out[i] = src[i%len(src)]
		}
		return out
	}
	D := make([]byte, v)
	for i := range D {
		D[i] = id
	}
	I := append(fill(salt), fill(password)...)
	var A []byte
	for len(A) < size {
		hh := h()
		hh.Write(D)
		hh.Write(I)
		Ai := hh.Sum(nil)
		for j := 1; j < iterations; j++ {
			hh = h()
			hh.Write(Ai)
			Ai = hh.Sum(nil)
		}
		A = append(A, Ai...)
		B := make([]byte, v)
		for i := range B {
			B[i] = Ai[i%u]
		}
		for j := 0; j < len(I); j += v {
			carry := 1
			for k := v - 1; k >= 0; k-- {
				sum := int(I[j+k]) + int(B[k]) + carry
				I[j+k] = byte(sum)
				carry = sum >> 8
			}
		}
	}
	return A[:size]
}

func hashByOID(oid asn1.ObjectIdentifier) func() hash.Hash {
	switch {
	case oid.Equal(oidSHA1), oid.Equal(oidHMACWithSHA1):
		return sha1.New
	case oid.Equal(oidSHA256), oid.Equal(oidHMACWithSHA256):
		return sha256.New
	case oid.Equal(oidSHA384), oid.Equal(oidHMACWithSHA384):
		return sha512.New384
	case oid.Equal(oidSHA512), oid.Equal(oidHMACWithSHA512):
		return sha512.New
	}
	return nil
}

// decrypt decrypts data encrypted with alg under password.
func decrypt(alg algorithmIdentifier, data []byte, password string) ([]byte, error) {
	var (
		block cipher.Block
		iv    []byte
		err   error
	)
	switch {
	case alg.Algorithm.Equal(oidPBES2):
		var p pbes2Params
		if _, err := asn1.Unmarshal(alg.Parameters.FullBytes, &p); err != nil {
			return nil, fmt.Errorf("%w: PBES2 parameters: %v", errPKCS12, err)
		}
		if !p.KeyDerivationFunc.Algorithm.Equal(oidPBKDF2) {
			return nil, fmt.Errorf("%w: key derivation %v", errPKCS12Unsupported, p.KeyDerivationFunc.Algorithm)
		}
		var kdf pbkdf2Params
		if _, err := asn1.Unmarshal(p.KeyDerivationFunc.Parameters.FullBytes, &kdf); err != nil {
			return nil, fmt.Errorf("%w: PBKDF2 parameters: %v", errPKCS12, err)
		}
		prf := hashByOID(kdf.PRF.Algorithm)
		if len(kdf.PRF.Algorithm) == 0 {
			prf = sha1.New
		}
		if prf == nil {
			return nil, fmt.Errorf("%w: PBKDF2 PRF %v", errPKCS12Unsupported, kdf.PRF.Algorithm)
		}
		var keyLen int
		var newCipher func([]byte) (cipher.Block, error)
		switch s := p.EncryptionScheme.Algorithm; {
		case s.Equal(oidAES128CBC):
			keyLen, newCipher = 16, aes.NewCipher
		case s.Equal(oidAES192CBC):
			keyLen, newCipher = 24, aes.NewCipher
		case s.Equal(oidAES256CBC):
			keyLen, newCipher = 32, aes.NewCipher
		case s.Equal(oidDESEDE3CBC):
			keyLen, newCipher = 24, des.NewTripleDESCipher
		default:
			return nil, fmt.Errorf("%w: cipher %v", errPKCS12Unsupported, s)
		}
		if _, err := asn1.Unmarshal(p.EncryptionScheme.Parameters.FullBytes, &iv); err != nil {
			return nil, fmt.Errorf("%w: cipher IV: %v", errPKCS12, err)
		}
		key, err := pbkdf2.Key(prf, password, kdf.Salt, kdf.IterationCount, keyLen)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errPKCS12, err)
		}
		if block, err = newCipher(key); err != nil {
			return nil, err
		}
	case alg.Algorithm.Equal(oidPBEWithSHA3DES):
		var p pbeParams
		if _, err := asn1.Unmarshal(alg.Parameters.FullBytes, &p); err != nil {
			return nil, fmt.Errorf("%w: PBE parameters: %v", errPKCS12, err)
		}
		pw := bmpPassword(password)
		key := pkcs12KDF(sha1.New, pw, p.Salt, 1, p.Iterations, 24)
		iv = pkcs12KDF(sha1.New, pw, p.Salt, 2, p.Iterations, 8)
		if block, err = des.NewTripleDESCipher(key); err != nil {
			return nil, err
		}
	case alg.Algorithm.Equal(oidPBEWithSHARC2_40):
		return nil, fmt.Errorf("%w: RC2-40 encryption (openssl 1.x or an old keytool); re-export the store with AES (openssl pkcs12 -export -certpbe AES-256-CBC -keypbe AES-256-CBC) or use PEM", errPKCS12Unsupported)
	default:
		return nil, fmt.Errorf("%w: encryption %v", errPKCS12Unsupported, alg.Algorithm)
	}
	if len(iv) != block.BlockSize() || len(data) == 0 || len(data)%block.BlockSize() != 0 {
		return nil, fmt.Errorf("%w: malformed encrypted data", errPKCS12)
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, data)
	pad := int(out[len(out)-1])
	if pad == 0 || pad > block.BlockSize() || pad > len(out) {
		return nil, errPKCS12DecryptPadding
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errPKCS12DecryptPadding
		}
	}
	return out[:len(out)-pad], nil
}

// decryptPKCS8 decrypts an EncryptedPrivateKeyInfo into PKCS#8 DER.
func decryptPKCS8(der, password []byte) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if _, err := asn1.Unmarshal(der, &info); err != nil {
		return nil, fmt.Errorf("%w: encrypted private key: %v", errPKCS12, err)
	}
	return decrypt(info.Algorithm, info.EncryptedData, string(password))
}

// pkcs12Bags decodes a PKCS#12 store, checks its MAC and returns its
// certificates and private keys (PKCS#8 DER).
func pkcs12Bags(data []byte, password, keyPassword string) (certs []*x509.Certificate, keys [][]byte, err error) {
	var p pfx
	if _, err := asn1.Unmarshal(data, &p); err != nil {
		return nil, nil, fmt.Errorf("%w: not a PKCS#12 store: %v", errPKCS12, err)
	}
	if !p.AuthSafe.ContentType.Equal(oidData) {
		return nil, nil, fmt.Errorf("%w: public-key protected stores are not supported", errPKCS12Unsupported)
	}
	var authSafe []byte
	if _, err := asn1.Unmarshal(p.AuthSafe.Content.Bytes, &authSafe); err != nil {
		return nil, nil, fmt.Errorf("%w: authSafe: %v", errPKCS12, err)
	}
	if len(p.MacData.Mac.Digest) > 0 {
		h := hashByOID(p.MacData.Mac.Algorithm.Algorithm)
		if h == nil {
			return nil, nil, fmt.Errorf("%w: MAC %v", errPKCS12Unsupported, p.MacData.Mac.Algorithm.Algorithm)
		}
		key := pkcs12KDF(h, bmpPassword(password), p.MacData.MacSalt, 3, p.MacData.Iterations, h().Size())
		m := hmac.New(h, key)
		m.Write(authSafe)
		if !hmac.Equal(m.Sum(nil), p.MacData.Mac.Digest) {
			return nil, nil, errPKCS12BadPassword
		}
	}
	var infos []contentInfo
	if _, err := asn1.Unmarshal(authSafe, &infos); err != nil {
		return nil, nil, fmt.Errorf("%w: authenticated safe: %v", errPKCS12, err)
	}
	for _, ci := range infos {
		var contents []byte
		switch {
		case ci.ContentType.Equal(oidData):
			if _, err := asn1.Unmarshal(ci.Content.Bytes, &contents); err != nil {
				return nil, nil, fmt.Errorf("%w: safe contents: %v", errPKCS12, err)
			}
		case ci.ContentType.Equal(oidEncryptedData):
			var ed encryptedData
			if _, err := asn1.Unmarshal(ci.Content.Bytes, &ed); err != nil {
				return nil, nil, fmt.Errorf("%w: encrypted data: %v", errPKCS12, err)
			}
			if contents, err = decrypt(ed.EncryptedContentInfo.ContentEncryptionAlgorithm, ed.EncryptedContentInfo.EncryptedContent.Bytes, password); err != nil {
				return nil, nil, err
			}
		default:
			continue
		}
		var bags []safeBag
		if _, err := asn1.Unmarshal(contents, &bags); err != nil {
			return nil, nil, fmt.Errorf("%w: safe bags: %v", errPKCS12, err)
		}
		for _, b := range bags {
			switch {
			case b.ID.Equal(oidCertBag):
				var cb certBag
				if _, err := asn1.Unmarshal(b.Value.Bytes, &cb); err != nil {
					return nil, nil, fmt.Errorf("%w: certificate bag: %v", errPKCS12, err)
				}
				if !cb.ID.Equal(oidX509Certificate) {
					continue
				}
				c, err := x509.ParseCertificate(cb.Data)
				if err != nil {
					return nil, nil, fmt.Errorf("%w: certificate: %v", errPKCS12, err)
				}
				certs = append(certs, c)
			case b.ID.Equal(oidKeyBag):
				keys = append(keys, b.Value.Bytes)
			case b.ID.Equal(oidShroudedKeyBag):
				pw := keyPassword
				if pw == "" {
					pw = password
				}
				der, err := decryptPKCS8(b.Value.Bytes, []byte(pw))
				if err != nil && keyPassword != "" && keyPassword != password {
					der, err = decryptPKCS8(b.Value.Bytes, []byte(password))
				}
				if err != nil {
					return nil, nil, fmt.Errorf("private key: %w", err)
				}
				keys = append(keys, der)
			}
		}
	}
	return certs, keys, nil
}

// pkcs12KeyPair reads the broker's key and certificate chain from a
// PKCS#12 keystore: the certificate whose public key matches the key, then
// the other certificates as the chain.
func pkcs12KeyPair(data []byte, storePassword, keyPassword string) (tls.Certificate, error) {
	var cert tls.Certificate
	certs, keys, err := pkcs12Bags(data, storePassword, keyPassword)
	if err != nil {
		return cert, err
	}
	if len(keys) == 0 {
		return cert, fmt.Errorf("%w: the keystore holds no private key", errPKCS12)
	}
	key, err := parsePrivateKey(keys[0])
	if err != nil {
		return cert, err
	}
	for i, c := range certs {
		if checkKeyMatches(c, key) == nil {
			cert.Certificate = append(cert.Certificate, c.Raw)
			cert.Leaf = c
			for j, o := range certs {
				if j != i {
					cert.Certificate = append(cert.Certificate, o.Raw)
				}
			}
			cert.PrivateKey = key
			return cert, nil
		}
	}
	return cert, fmt.Errorf("%w: no certificate of the keystore matches its private key", errPKCS12)
}

// pkcs12Certificates reads the certificates of a PKCS#12 truststore.
func pkcs12Certificates(data []byte, password string) ([]*x509.Certificate, error) {
	certs, _, err := pkcs12Bags(data, password, "")
	return certs, err
}
