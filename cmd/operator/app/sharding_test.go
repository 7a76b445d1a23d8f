package app

import (
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// TestJoinRingRefuses: flags that cannot make a ring are refused before
// anything is written to the cluster (the config points nowhere).
func TestJoinRingRefuses(t *testing.T) {
	good := leaderFlags{leaseDuration: 15 * time.Second, renewDeadline: 10 * time.Second, retryPeriod: 2 * time.Second}
	cases := []struct {
		name    string
		leader  leaderFlags
		id      string
		wantErr string
	}{
		{name: "with leader election", leader: func() leaderFlags { l := good; l.enabled = true; return l }(), id: "a",
			wantErr: "--sharding and --leader-elect exclude each other"},
		{name: "a shard id that is not a DNS label", leader: good, id: "Shard_A", wantErr: `shard id "Shard_A"`},
		{name: "a lease duration the Lease cannot store", leader: func() leaderFlags { l := good; l.leaseDuration = 1500 * time.Millisecond; return l }(), id: "a",
			wantErr: "lease duration 1.5s: must be whole seconds"},
		{name: "a renew deadline past the lease duration", leader: func() leaderFlags { l := good; l.renewDeadline = 20 * time.Second; return l }(), id: "a",
			wantErr: "renew deadline 20s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &runFlags{fieldManager: "operator", stateNamespace: "ops", leader: tc.leader, shard: shardFlags{enabled: true, id: tc.id}}
			_, err := joinRing(t.Context(), &rest.Config{Host: "http://127.0.0.1:1"}, f)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v; want one with %q", err, tc.wantErr)
			}
		})
	}
}
