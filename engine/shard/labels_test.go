package shard

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestID(t *testing.T) {
	long := strings.Repeat("operator-", 10) // 90 characters
	cases := []struct {
		name, in, want, wantErr string
	}{
		{name: "pod name", in: "operator-7d9f8b6c5d-x2k4p", want: "operator-7d9f8b6c5d-x2k4p"},
		{name: "host name with dots", in: "node1.example.com", want: "node1-example-com"},
		{name: "upper case and underscores", in: "Operator_Replica_0", want: "operator-replica-0"},
		{name: "edges trimmed", in: "--op--", want: "op"},
		{name: "nothing left", in: "._-", wantErr: "no letter or digit"},
		{name: "empty", in: "", wantErr: "no letter or digit"},
		{name: "long: cut, with a hash of the whole", in: long, want: long[:53]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ID(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ID(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msgs := validation.IsDNS1123Label(got); len(msgs) > 0 {
				t.Errorf("ID(%q) = %q: not a DNS label: %v", tc.in, got, msgs)
			}
			if len(tc.in) > 63 {
				if !strings.HasPrefix(got, tc.want+"-") || len(got) != len(tc.want)+9 {
					t.Errorf("ID(%q) = %q; want %q, '-' and 8 hex digits", tc.in, got, tc.want)
				}
				return
			}
			if got != tc.want {
				t.Errorf("ID(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
	// Two long names alike in their first 63 characters stay apart.
	a, _ := ID(long + "a")
	b, _ := ID(long + "b")
	if a == b {
		t.Errorf("ID of two long names is the same: %q", a)
	}
}

func TestLeaseName(t *testing.T) {
	cases := []struct {
		name, ring, lease, id string
		ok                    bool
	}{
		{name: "a shard's lease", ring: "operator", lease: "operator-shard-op-0", id: "op-0", ok: true},
		{name: "another ring's", ring: "operator", lease: "other-shard-op-0"},
		{name: "the leader's lease", ring: "operator", lease: "operator-leader"},
		{name: "no id", ring: "operator", lease: "operator-shard-"},
		{name: "an id that is no DNS label", ring: "operator", lease: "operator-shard-a.b"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, ok := idOf(tc.ring, tc.lease)
			if ok != tc.ok || id != tc.id {
				t.Fatalf("idOf(%q, %q) = %q, %v; want %q, %v", tc.ring, tc.lease, id, ok, tc.id, tc.ok)
			}
			if ok && LeaseName(tc.ring, id) != tc.lease {
				t.Errorf("LeaseName(%q, %q) = %q; want %q", tc.ring, id, LeaseName(tc.ring, id), tc.lease)
			}
		})
	}
}

func TestKey(t *testing.T) {
	if got := Key("apps", "Deployment", "ns", "web"); got != "apps/Deployment/ns/web" {
		t.Errorf("Key = %q", got)
	}
	// The core group and cluster-scoped objects keep their places, so
	// that no two objects share a key.
	if got := Key("", "Namespace", "", "ns"); got != "/Namespace//ns" {
		t.Errorf("Key of a core, cluster-scoped object = %q", got)
	}
}

func TestAssignPatch(t *testing.T) {
	got, err := AssignPatch("op-1", "42")
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"metadata":{"labels":{"shard.tmplop.io/shard":"op-1"},"resourceVersion":"42"}}`
	if string(got) != want {
		t.Errorf("AssignPatch = %s; want %s", got, want)
	}
	if _, err := AssignPatch("op-1", ""); err == nil {
		t.Error("AssignPatch without a resourceVersion: no error; a write without the condition could undo the holder's")
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Namespace: "ops", Ring: "operator", LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	cases := []struct {
		name    string
		change  func(*Config)
		wantErr string
		alsoErr string
	}{
		{name: "Kubernetes' durations", change: func(*Config) {}},
		{name: "the tests' durations", change: func(c *Config) {
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
		}},
		{name: "no namespace", change: func(c *Config) { c.Namespace = "" }, wantErr: "namespace"},
		{name: "no ring", change: func(c *Config) { c.Ring = "" }, wantErr: "ring: empty"},
		{name: "ring not a label value", change: func(c *Config) { c.Ring = "a/b" }, wantErr: "not a label value"},
		{name: "ring cannot name a lease", change: func(c *Config) { c.Ring = "Operator" }, wantErr: "cannot name a Lease"},
		{name: "lease duration not whole seconds", change: func(c *Config) { c.LeaseDuration = 2500 * time.Millisecond }, wantErr: "whole seconds"},
		{name: "renew deadline equal to the lease duration", change: func(c *Config) { c.RenewDeadline = c.LeaseDuration }, wantErr: "renew deadline"},
		{name: "retry period equal to the renew deadline", change: func(c *Config) { c.RetryPeriod = c.RenewDeadline }, wantErr: "retry period"},
		{name: "every fault at once", change: func(c *Config) { c.Namespace, c.Ring = "", "" }, wantErr: "ring: empty", alsoErr: `namespace ""`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good
			tc.change(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.alsoErr) {
				t.Fatalf("Validate = %v; want an error with %q and %q", err, tc.wantErr, tc.alsoErr)
			}
		})
	}
}
