package bus

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
)

// TLSFiles names the PEM files of a TLS connection: the CA that signs the server's
// certificate (what a client trusts) and, for mutual TLS or a server, a certificate and key.
type TLSFiles struct {
	CA, Cert, Key string
}

// Enabled reports whether any file is set.
func (f TLSFiles) Enabled() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// AutoTLS writes a throwaway CA and a server certificate for 127.0.0.1 and localhost, valid
// for a day, into dir (keys 0600): a run's own TLS (--tls auto). It returns the server's
// files (Cert, Key) and the CA clients trust (CA).
func AutoTLS(dir string) (TLSFiles, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return TLSFiles{}, fmt.Errorf("bus: tls: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, fmt.Errorf("bus: tls: %w", err)
	}
	now := time.Now()
	serial := func() *big.Int {
		n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
		return n
	}
	caTmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "dpsim run CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, fmt.Errorf("bus: tls: CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return TLSFiles{}, fmt.Errorf("bus: tls: CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TLSFiles{}, fmt.Errorf("bus: tls: %w", err)
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "dpsim embedded NATS server"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return TLSFiles{}, fmt.Errorf("bus: tls: server certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return TLSFiles{}, fmt.Errorf("bus: tls: %w", err)
	}
	f := TLSFiles{CA: filepath.Join(dir, "ca.pem"), Cert: filepath.Join(dir, "server.pem"), Key: filepath.Join(dir, "server-key.pem")}
	for _, w := range []struct {
		path, kind string
		der        []byte
		mode       os.FileMode
	}{{f.CA, "CERTIFICATE", caDER, 0o644}, {f.Cert, "CERTIFICATE", der, 0o644}, {f.Key, "EC PRIVATE KEY", keyDER, 0o600}} {
		if err := os.WriteFile(w.path, pem.EncodeToMemory(&pem.Block{Type: w.kind, Bytes: w.der}), w.mode); err != nil {
			return TLSFiles{}, fmt.Errorf("bus: tls: %w", err)
		}
	}
	return f, nil
}

// serverTLS is the server's TLS configuration from its certificate and key.
func serverTLS(f TLSFiles) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("bus: tls: server certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// WithTLS makes the client use TLS: trust f.CA (when set) and present f.Cert/f.Key (when set).
func WithTLS(f TLSFiles) Option {
	return func(c *connConfig) {
		if !f.Enabled() {
			return
		}
		c.natsOpts = append(c.natsOpts, nats.Secure(&tls.Config{MinVersion: tls.VersionTLS12}))
		if f.CA != "" {
			c.natsOpts = append(c.natsOpts, nats.RootCAs(f.CA))
		}
		if f.Cert != "" || f.Key != "" {
			c.natsOpts = append(c.natsOpts, nats.ClientCert(f.Cert, f.Key))
		}
	}
}
