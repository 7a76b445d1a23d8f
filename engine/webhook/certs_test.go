package webhook

import (
	"bytes"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"
)

func testPolicy() policy {
	return policy{
		caValidity: 30 * time.Hour, servingValidity: 9 * time.Hour, caPropagation: time.Hour, clockSkew: time.Hour,
		dnsNames: []string{"operator-webhook.operator-system.svc", "operator-webhook.operator-system.svc.cluster.local"},
		ips:      []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
}

func mustNext(t *testing.T, p policy, cur *chain, now time.Time) (*chain, string, time.Time) {
	t.Helper()
	data, why, recheck, err := p.next(cur, now)
	if err != nil {
		t.Fatal(err)
	}
	if data == nil {
		return cur, "", recheck
	}
	c, err := parseChain(data)
	if err != nil {
		t.Fatalf("the chain made does not parse: %v", err)
	}
	return c, why, recheck
}

// verify checks that c's serving certificate verifies for host against
// c's bundle, as the API server does with the CRD's caBundle.
func verify(c *chain, host string, now time.Time) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(c.bundle()) {
		return errUnparsable
	}
	_, err := c.leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, CurrentTime: now})
	return err
}

var errUnparsable = &net.AddrError{Err: "bundle does not parse"}

// TestChainVerifies: the chain made verifies for each DNS name and IP
// against its own bundle, and not for another name nor against another
// chain's bundle.
func TestChainVerifies(t *testing.T) {
	p, now := testPolicy(), time.Now()
	c, why, _ := mustNext(t, p, nil, now)
	if why != "no usable CA" {
		t.Errorf("why %q", why)
	}
	for _, host := range []string{"operator-webhook.operator-system.svc", "operator-webhook.operator-system.svc.cluster.local", "127.0.0.1", "::1"} {
		if err := verify(c, host, now); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if err := verify(c, "impostor.operator-system.svc", now); err == nil || !strings.Contains(err.Error(), "not impostor") {
		t.Errorf("another name: %v", err)
	}
	other, _, _ := mustNext(t, p, nil, now)
	c2 := &chain{leaf: c.leaf, data: map[string][]byte{SecretCAKey: other.bundle()}}
	if err := verify(c2, "127.0.0.1", now); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Errorf("another CA: %v", err)
	}
	if !c.cas[0].IsCA || c.cas[0].PublicKeyAlgorithm != x509.ECDSA || c.leaf.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("CA %v (%v), leaf %v", c.cas[0].IsCA, c.cas[0].PublicKeyAlgorithm, c.leaf.PublicKeyAlgorithm)
	}
	if c.leaf.NotAfter.Sub(now) > p.servingValidity || c.cas[0].NotAfter.Sub(now) > p.caValidity {
		t.Errorf("valid until %v (leaf), %v (CA)", c.leaf.NotAfter, c.cas[0].NotAfter)
	}
}

// TestPolicyLifecycle walks a chain through its life: nothing to do
// while fresh; the serving certificate renewed by the same CA in its
// last third; the CA rolled in its last third with both CAs in the
// bundle and the old leaf kept; the new CA signing only after the
// propagation delay; the old CA dropped once expired. At every step the
// certificate served verifies against the bundle.
func TestPolicyLifecycle(t *testing.T) {
	p := testPolicy()
	t0 := time.Now().Truncate(time.Second)
	c, _, recheck := mustNext(t, p, nil, t0)
	ca1 := c.cas[0]
	steps := []struct {
		name    string
		at      time.Duration // after t0
		wantWhy string
		check   func(t *testing.T, prev, c *chain)
	}{
		{name: "fresh: nothing", at: 5 * time.Hour, check: func(t *testing.T, prev, c *chain) {
			if c != prev {
				t.Error("changed")
			}
		}},
		{name: "serving certificate in its last third: renewed by the same CA", at: 7 * time.Hour, wantWhy: "serving certificate renewed",
			check: func(t *testing.T, prev, c *chain) {
				if c.leaf.Equal(prev.leaf) || !c.cas[0].Equal(ca1) || len(c.cas) != 1 {
					t.Errorf("leaf renewed %v, CAs %d", !c.leaf.Equal(prev.leaf), len(c.cas))
				}
			}},
		{name: "and again, at its next last third", at: 13*time.Hour + time.Minute, wantWhy: "serving certificate renewed",
			check: func(t *testing.T, prev, c *chain) {
				if c.leaf.Equal(prev.leaf) || !c.cas[0].Equal(ca1) {
					t.Error("not renewed by the same CA")
				}
			}},
		{name: "CA in its last third: rolled, old kept, leaf kept", at: 20*time.Hour + time.Minute, wantWhy: "CA rolled",
			check: func(t *testing.T, prev, c *chain) {
				if len(c.cas) != 2 || !c.cas[1].Equal(ca1) || c.cas[0].Equal(ca1) || !c.leaf.Equal(prev.leaf) {
					t.Errorf("CAs %d, leaf kept %v", len(c.cas), c.leaf.Equal(prev.leaf))
				}
			}},
		{name: "leaf due before the new CA propagated: waits", at: 20*time.Hour + 30*time.Minute, check: func(t *testing.T, prev, c *chain) {
			if c != prev {
				t.Error("changed")
			}
		}},
		{name: "after the propagation: signed by the new CA", at: 21*time.Hour + 2*time.Minute, wantWhy: "serving certificate renewed",
			check: func(t *testing.T, prev, c *chain) {
				if c.leaf.Equal(prev.leaf) || c.leaf.CheckSignatureFrom(c.cas[0]) != nil {
					t.Error("the leaf is not the new CA's")
				}
			}},
		{name: "old CA expired: dropped", at: 30*time.Hour + 2*time.Second, wantWhy: "expired CA dropped, serving certificate renewed",
			check: func(t *testing.T, prev, c *chain) {
				if len(c.cas) != 1 || c.cas[0].Equal(ca1) {
					t.Errorf("CAs %d", len(c.cas))
				}
			}},
	}
	for _, st := range steps {
		now := t0.Add(st.at)
		if recheck.After(now) && st.wantWhy != "" {
			t.Errorf("%s: the recheck %v is after the change due at %v", st.name, recheck.Sub(t0), st.at)
		}
		next, why, r := mustNext(t, p, c, now)
		if why != st.wantWhy {
			t.Fatalf("%s: why %q, want %q", st.name, why, st.wantWhy)
		}
		st.check(t, c, next)
		if err := verify(next, "127.0.0.1", now); err != nil {
			t.Errorf("%s: the certificate served does not verify: %v", st.name, err)
		}
		if !r.After(now) {
			t.Errorf("%s: recheck %v not after now %v", st.name, r.Sub(t0), st.at)
		}
		c, recheck = next, r
	}
}

// TestPolicyRepairs: what the Secret holds broken is made again, keeping
// the CA whenever it is usable (the CRDs already trust it).
func TestPolicyRepairs(t *testing.T) {
	p, now := testPolicy(), time.Now()
	good, _, _ := mustNext(t, p, nil, now)
	other, _, _ := mustNext(t, p, nil, now)
	with := func(k string, v []byte) map[string][]byte {
		d := map[string][]byte{}
		for kk, vv := range good.data {
			d[kk] = vv
		}
		if v == nil {
			delete(d, k)
		} else {
			d[k] = v
		}
		return d
	}
	cases := []struct {
		name    string
		data    map[string][]byte
		keepCA  bool
		wantWhy string
	}{
		{"empty", map[string][]byte{}, false, "no usable CA"},
		{"no CA key", with(SecretCAKeyKey, nil), false, "no usable CA"},
		{"CA key of another CA", with(SecretCAKeyKey, other.data[SecretCAKeyKey]), false, "no usable CA"},
		{"no serving key", with(SecretKeyKey, nil), true, "serving certificate replaced"},
		{"serving certificate of another CA", with(SecretCertKey, other.data[SecretCertKey]), true, "serving certificate replaced"},
		{"another name wanted", good.data, true, "serving certificate replaced"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pp := p
			if tc.name == "another name wanted" {
				pp.dnsNames = append(slicesClone(p.dnsNames), "operator-webhook.other.svc")
			}
			cur, _ := parseChain(tc.data)
			c, why, _ := mustNext(t, pp, cur, now)
			if why != tc.wantWhy {
				t.Fatalf("why %q, want %q", why, tc.wantWhy)
			}
			if got := bytes.Equal(c.bundle(), good.bundle()); got != tc.keepCA {
				t.Errorf("CA kept: %v, want %v", got, tc.keepCA)
			}
			if err := verify(c, "127.0.0.1", now); err != nil {
				t.Error(err)
			}
		})
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// TestPolicyRemake: a Secret deleted while a chain is served is made
// again with a new CA rolled in beside the old one, the certificate
// served kept (the CRDs trust only the old CA yet); once the new CA has
// propagated, the certificate is signed by it. With nothing usable served,
// a new chain.
func TestPolicyRemake(t *testing.T) {
	p := testPolicy()
	t0 := time.Now().Truncate(time.Second)
	cur, _, _ := mustNext(t, p, nil, t0)
	now := t0.Add(time.Hour)
	data, why, err := p.remake(cur, now)
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseChain(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cas) != 2 || c.cas[0].Equal(cur.cas[0]) || !c.cas[1].Equal(cur.cas[0]) || !c.leaf.Equal(cur.leaf) {
		t.Fatalf("remade (%s): %d CAs, old CA second %v, leaf kept %v; want the new CA, then the old, and the leaf kept",
			why, len(c.cas), len(c.cas) > 1 && c.cas[1].Equal(cur.cas[0]), c.leaf.Equal(cur.leaf))
	}
	if err := verify(c, "127.0.0.1", now); err != nil {
		t.Errorf("the certificate served does not verify against the remade bundle: %v", err)
	}
	// The new CA is created at now (its NotBefore is back-dated by the
	// skew): nothing moves before the propagation, and the leaf moves to
	// the new CA after it.
	if next, why, recheck := mustNext(t, p, c, now.Add(p.caPropagation-time.Minute)); next != c {
		t.Errorf("before the propagation: changed (%s)", why)
	} else if recheck.After(now.Add(p.caPropagation)) {
		t.Errorf("recheck %v after the propagation's end", recheck.Sub(now))
	}
	next, why, _ := mustNext(t, p, c, now.Add(p.caPropagation+time.Second))
	if why != "serving certificate renewed" || next.leaf.CheckSignatureFrom(next.cas[0]) != nil || len(next.cas) != 2 {
		t.Errorf("after the propagation: %q, leaf of the new CA %v, CAs %d", why, next.leaf.CheckSignatureFrom(next.cas[0]) == nil, len(next.cas))
	}

	for name, cur := range map[string]*chain{"none served": nil, "expired": cur} {
		at := t0
		if cur != nil {
			at = t0.Add(31 * time.Hour)
		}
		data, _, err := p.remake(cur, at)
		if err != nil {
			t.Fatal(err)
		}
		c, err := parseChain(data)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.cas) != 1 || c.leaf.CheckSignatureFrom(c.cas[0]) != nil {
			t.Errorf("%s: %d CAs, leaf of the CA %v; want a new chain", name, len(c.cas), c.leaf.CheckSignatureFrom(c.cas[0]) == nil)
		}
	}
}
