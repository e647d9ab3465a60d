package broker

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
)

// errPKCS12 marks a PKCS#12 store samsa cannot read.
var errPKCS12 = errors.New("broker: PKCS#12 keystores are not supported yet; use PEM (ssl.keystore.type=PEM)")

func pkcs12KeyPair(data []byte, storePassword, keyPassword string) (tls.Certificate, error) {
	return tls.Certificate{}, errPKCS12
}

func pkcs12Certificates(data []byte, password string) ([]*x509.Certificate, error) {
	return nil, errPKCS12
}

func decryptPKCS8(der, password []byte) ([]byte, error) {
	return nil, errors.New("broker: encrypted PKCS#8 keys are not supported yet")
}
