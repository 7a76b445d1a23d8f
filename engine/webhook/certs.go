package webhook

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"
)

// The keys of the webhook's Secret: a kubernetes.io/tls Secret (tls.crt,
// tls.key) with the CA bundle in ca.crt, as cert-manager writes them (so
// that its CA injector, cert-manager.io/inject-ca-from-secret, can read
// the bundle too), and the signing CA's key in ca.key.
const (
	SecretCertKey   = "tls.crt"
	SecretKeyKey    = "tls.key"
	SecretCAKey     = "ca.crt"
	SecretCAKeyKey  = "ca.key"
	secretTypeTLS   = "kubernetes.io/tls"
	caCommonName    = "operator-webhook-ca"
	leafCommonName  = "operator-webhook"
	pemCertificate  = "CERTIFICATE"
	pemECPrivateKey = "EC PRIVATE KEY"
)

// Validities and the rule of renewal, by default.
const (
	// DefaultCAValidity: ten years, as kubeadm's CAs; the CA rolls in its
	// last third, years before it expires.
	DefaultCAValidity = 10 * 365 * 24 * time.Hour
	// DefaultServingValidity: one year, as kubeadm's serving certificates;
	// renewed in its last third, four months before it expires.
	DefaultServingValidity = 365 * 24 * time.Hour
	// DefaultCAPropagation: how long a new CA is in the bundle before a
	// serving certificate is signed by it, so that the CRDs' caBundle
	// (patched by the leader's CRD installer, or by cert-manager's CA
	// injector) holds it before it is needed.
	DefaultCAPropagation = time.Hour
	// DefaultClockSkew: certificates are valid from this long before they
	// are made, for API servers whose clock is behind ours.
	DefaultClockSkew = time.Hour
)

// policy is when the chain is made, renewed and rolled.
type policy struct {
	caValidity, servingValidity, caPropagation, clockSkew time.Duration
	dnsNames                                              []string
	ips                                                   []net.IP
}

// chain is the content of the Secret, parsed.
type chain struct {
	cas   []*x509.Certificate // ca.crt: the bundle, newest first
	caKey crypto.Signer       // ca.key: the key of cas[0], which signs
	leaf  *x509.Certificate   // tls.crt's first certificate
	cert  *tls.Certificate    // tls.crt and tls.key, to serve
	// The data it was parsed from.
	data map[string][]byte
}

// bundle is ca.crt: what the CRDs' caBundle holds.
func (c *chain) bundle() []byte { return c.data[SecretCAKey] }

// parseChain reads a Secret's data: nil and an error when its CA or the
// CA's key is missing or broken (the policy then makes a new chain); a
// chain without a serving certificate, and an error, when only that is
// (the policy then signs a new one by the same CA, which the CRDs
// already trust).
func parseChain(data map[string][]byte) (*chain, error) {
	c := &chain{data: data}
	rest := data[SecretCAKey]
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != pemCertificate {
			continue
		}
		x, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", SecretCAKey, err)
		}
		c.cas = append(c.cas, x)
	}
	if len(c.cas) == 0 {
		return nil, fmt.Errorf("%s holds no certificate", SecretCAKey)
	}
	b, _ := pem.Decode(data[SecretCAKeyKey])
	if b == nil {
		return nil, fmt.Errorf("%s holds no PEM key", SecretCAKeyKey)
	}
	key, err := x509.ParseECPrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SecretCAKeyKey, err)
	}
	if !key.PublicKey.Equal(c.cas[0].PublicKey) {
		return nil, fmt.Errorf("%s is not the key of the first CA of %s", SecretCAKeyKey, SecretCAKey)
	}
	c.caKey = key
	cert, err := tls.X509KeyPair(data[SecretCertKey], data[SecretKeyKey])
	if err != nil {
		return c, fmt.Errorf("%s and %s: %w", SecretCertKey, SecretKeyKey, err)
	}
	c.cert, c.leaf = &cert, cert.Leaf
	return c, nil
}

// remake is what a Secret made again holds (deleted while cur is served):
// a new CA, rolled the way a CA in its last third is, not swapped. The
// new CA joins cur's CAs in the bundle and cur's certificate is served
// until the new CA has propagated (next then signs a new one with it): a
// certificate of the new CA served at once would meet CRDs whose caBundle
// does not hold it yet, and every conversion would fail until they do.
// With nothing usable served, a new chain.
func (p policy) remake(cur *chain, now time.Time) (data map[string][]byte, why string, err error) {
	if cur == nil || cur.cert == nil || !p.usable(cur.leaf, cur.cas, now) {
		data, why, _, err := p.next(nil, now)
		return data, why, err
	}
	ca, key, err := p.newCA(now)
	if err != nil {
		return nil, "", err
	}
	cas := slices.DeleteFunc(slices.Clone(cur.cas), func(x *x509.Certificate) bool { return now.After(x.NotAfter) })
	data, err = encode(append([]*x509.Certificate{ca}, cas...), key, cur.data[SecretCertKey], cur.data[SecretKeyKey])
	return data, "Secret made again: CA rolled, the certificate served kept until the new CA has propagated", err
}

// next says what the Secret should hold at now: nil when cur needs
// nothing, else the new data and why; and, either way, when to look
// again.
func (p policy) next(cur *chain, now time.Time) (data map[string][]byte, why string, recheck time.Time, err error) {
	if cur == nil || now.After(cur.cas[0].NotAfter) {
		ca, key, err := p.newCA(now)
		if err != nil {
			return nil, "", time.Time{}, err
		}
		leafPEM, leafKey, err := p.newLeaf(now, ca, key)
		if err != nil {
			return nil, "", time.Time{}, err
		}
		data, err := encode([]*x509.Certificate{ca}, key, leafPEM, leafKey)
		return data, "no usable CA", time.Time{}, err
	}
	cas, caKey := cur.cas, cur.caKey
	var whys []string
	// Expired CAs leave the bundle.
	if kept := slices.DeleteFunc(slices.Clone(cas), func(x *x509.Certificate) bool { return now.After(x.NotAfter) }); len(kept) != len(cas) {
		cas = kept
		whys = append(whys, "expired CA dropped")
	}
	// The signing CA rolls in its last third: the new one signs from now
	// on (after the propagation delay), the old one stays in the bundle
	// until it expires, so that certificates it signed keep verifying.
	if !now.Before(p.renewAt(cas[0])) {
		ca, key, err := p.newCA(now)
		if err != nil {
			return nil, "", time.Time{}, err
		}
		cas, caKey = append([]*x509.Certificate{ca}, cas...), key
		whys = append(whys, "CA rolled")
	}
	leafPEM, leafKey := cur.data[SecretCertKey], cur.data[SecretKeyKey]
	usable := p.usable(cur.leaf, cas, now)
	// A leaf of an older CA is due too: once the new CA has propagated,
	// the chain served moves to it (not at the leaf's own renewal, months
	// later), which is what a CA rolled early (the Secret deleted) is for.
	due := !usable || !now.Before(p.renewAt(cur.leaf)) || cur.leaf.CheckSignatureFrom(cas[0]) != nil
	propagated := !now.Before(p.created(cas[0]).Add(p.caPropagation))
	if due && (propagated || !usable) {
		if leafPEM, leafKey, err = p.newLeaf(now, cas[0], caKey); err != nil {
			return nil, "", time.Time{}, err
		}
		if usable {
			whys = append(whys, "serving certificate renewed")
		} else {
			whys = append(whys, "serving certificate replaced")
		}
	}
	// When to look again: the next of these moments (the callers also look
	// at every change of the Secret).
	var leaf *x509.Certificate
	if len(whys) == 0 {
		leaf = cur.leaf
	} else if leaf, err = parseLeaf(leafPEM); err != nil {
		return nil, "", time.Time{}, err
	}
	recheck = p.renewAt(leaf)
	if due && !propagated {
		recheck = p.created(cas[0]).Add(p.caPropagation)
	}
	for _, x := range cas {
		recheck = earliest(recheck, x.NotAfter.Add(time.Second))
	}
	recheck = earliest(recheck, p.renewAt(cas[0]))
	if len(whys) == 0 {
		return nil, "", recheck, nil
	}
	data, err = encode(cas, caKey, leafPEM, leafKey)
	return data, strings.Join(whys, ", "), recheck, err
}

// usable: leaf is valid at now for every name, and verifies against the
// bundle.
func (p policy) usable(leaf *x509.Certificate, cas []*x509.Certificate, now time.Time) bool {
	if leaf == nil || now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return false
	}
	roots := x509.NewCertPool()
	for _, ca := range cas {
		roots.AddCert(ca)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now}); err != nil {
		return false
	}
	for _, n := range p.dnsNames {
		if leaf.VerifyHostname(n) != nil {
			return false
		}
	}
	for _, ip := range p.ips {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return false
		}
	}
	return true
}

// created is when x was made: its NotBefore is back-dated by the skew.
func (p policy) created(x *x509.Certificate) time.Time { return x.NotBefore.Add(p.clockSkew) }

// renewAt is the start of the last third of x's validity.
func (p policy) renewAt(x *x509.Certificate) time.Time {
	start := p.created(x)
	return start.Add(x.NotAfter.Sub(start) * 2 / 3)
}

func (p policy) newCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: fmt.Sprintf("%s@%d", caCommonName, now.Unix())},
		NotBefore:             now.Add(-p.clockSkew),
		NotAfter:              now.Add(p.caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true, // it signs serving certificates, never another CA
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook CA: %w", err)
	}
	return ca, key, nil
}

// newLeaf makes a serving certificate for the policy's names, signed by
// ca, valid no longer than ca.
func (p policy) newLeaf(now time.Time, ca *x509.Certificate, caKey crypto.Signer) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook serving key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(p.servingValidity)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	cn := leafCommonName
	if len(p.dnsNames) > 0 {
		cn = p.dnsNames[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-p.clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     p.dnsNames,
		IPAddresses:  p.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook serving certificate: %w", err)
	}
	k, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook serving key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: pemECPrivateKey, Bytes: k}), nil
}

// encode is the Secret's data of a chain.
func encode(cas []*x509.Certificate, caKey crypto.Signer, leafPEM, leafKey []byte) (map[string][]byte, error) {
	var bundle bytes.Buffer
	for _, ca := range cas {
		if err := pem.Encode(&bundle, &pem.Block{Type: pemCertificate, Bytes: ca.Raw}); err != nil {
			return nil, err
		}
	}
	ecKey, ok := caKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("webhook CA key: not an ECDSA key")
	}
	k, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		return nil, fmt.Errorf("webhook CA key: %w", err)
	}
	return map[string][]byte{
		SecretCAKey:    bundle.Bytes(),
		SecretCAKeyKey: pem.EncodeToMemory(&pem.Block{Type: pemECPrivateKey, Bytes: k}),
		SecretCertKey:  leafPEM,
		SecretKeyKey:   leafKey,
	}, nil
}

func parseLeaf(certPEM []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return nil, fmt.Errorf("%s holds no PEM certificate", SecretCertKey)
	}
	return x509.ParseCertificate(b.Bytes)
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certificate serial number: %w", err)
	}
	return n, nil
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
