package main

import (
	"reflect"
	"testing"
)

func TestParseSample(t *testing.T) {
	for name, tc := range map[string]struct {
		line   string
		name   string
		labels map[string]string
		value  float64
		ok     bool
	}{
		"labels": {
			line:   `apiserver_request_total{code="200",group="apps",resource="deployments",verb="APPLY"} 1000`,
			name:   "apiserver_request_total",
			labels: map[string]string{"code": "200", "group": "apps", "resource": "deployments", "verb": "APPLY"},
			value:  1000, ok: true,
		},
		"escapes and exponent": {
			line:   `m{path="a\"b\\c"} 1.5e+03`,
			name:   "m",
			labels: map[string]string{"path": `a"b\c`},
			value:  1500, ok: true,
		},
		"no labels":    {line: "process_open_fds 12", name: "process_open_fds", labels: map[string]string{}, value: 12, ok: true},
		"comment":      {line: "# HELP apiserver_request_total counter"},
		"blank":        {line: "  "},
		"unterminated": {line: `m{a="b} 1`},
		"no value":     {line: `m{a="b"}`},
	} {
		t.Run(name, func(t *testing.T) {
			n, l, v, ok := parseSample(tc.line)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if n != tc.name || v != tc.value || !reflect.DeepEqual(l, tc.labels) {
				t.Errorf("got %s %v %v, want %s %v %v", n, l, v, tc.name, tc.labels, tc.value)
			}
		})
	}
}

// TestDiff: a watch counts once, when it starts, though kube-apiserver
// counts it in apiserver_request_total when it ends.
func TestDiff(t *testing.T) {
	watch := requestKey{Verb: "WATCH", Resource: "services"}
	apply := requestKey{Verb: "APPLY", Group: "apps", Resource: "deployments"}
	before := snapshot{
		requests:   map[requestKey]float64{watch: 1 + 2, apply: 10}, // 1 ended, 2 open
		dispatched: map[string]float64{flowSchemaWrites: 10, flowSchemaReads: 3, "exempt": 50},
		rejected:   map[string]float64{},
	}
	after := snapshot{
		// One of the open watches ended and a new one started: 2 ended, 2 open.
		requests:   map[requestKey]float64{watch: 2 + 2, apply: 25},
		dispatched: map[string]float64{flowSchemaWrites: 25, flowSchemaReads: 4, "exempt": 90},
		rejected:   map[string]float64{"service-accounts": 2},
	}
	d := diff(before, after)
	want := requestDiff{ByKey: map[requestKey]int64{watch: 1, apply: 15}, Measured: 16, Writes: 15, Rejected: 2}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("diff = %+v, want %+v", d, want)
	}
}
