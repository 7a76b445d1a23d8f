package render

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// renderStatus renders a one-line status.yaml and returns the result.
func renderStatus(t *testing.T, tmpl string, in Input) *Result {
	t.Helper()
	res, err := mustParse(t, map[string]string{"status.yaml": tmpl}).Status(t.Context(), in)
	if err != nil {
		t.Fatalf("%s: %v", tmpl, err)
	}
	return res
}

func TestHelmFunctions(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{
		"resources": map[string]any{"limits": map[string]any{"cpu": "1"}},
		"list":      []any{"a", int64(2)},
	}}
	tests := []struct {
		tmpl string
		want any
	}{
		{`v: {{ toYaml .Spec.resources | quote }}`, "limits:\n  cpu: \"1\""},
		{`v: {{ toYaml .Spec.list | quote }}`, "- a\n- 2"},
		{`v: {{ (fromYaml "a: 1\nb: [x]").b | first }}`, "x"},
		{`v: {{ (fromYaml "a: [").Error | contains "yaml" }}`, true},
		{`v: {{ fromYamlArray "[1, two]" | last }}`, "two"},
		{`v: {{ fromYamlArray "a: b" | len }}`, int64(1)},
		{`v: {{ toJson .Spec.list | quote }}`, `["a",2]`},
		{`v: {{ (fromJson "{\"a\": {\"b\": 1}}").a.b }}`, int64(1)},
		{`v: {{ (fromJson "{").Error | empty | not }}`, true},
		{`v: {{ fromJsonArray "[1, 2, 3]" | len }}`, int64(3)},
		{`v: {{ include "h" .Spec.list | quote }}{{ define "h" }}{{ index . 0 }}{{ end }}`, "a"},
		{`v: {{ required "unused" .Spec.list | len }}`, int64(2)},
		{`v: {{ getHostByName "example.com" | quote }}`, ""},
		{`v: {{ now | unixEpoch }}`, fixedNow.Unix()},
	}
	for _, tt := range tests {
		res := renderStatus(t, tt.tmpl, Input{Object: obj, Now: fixedNow})
		if got := res.Status["v"]; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.tmpl, got, tt.want)
		}
	}
}

func TestRequeueAfter(t *testing.T) {
	tests := []struct {
		tmpl string
		want time.Duration
	}{
		{`{{ requeueAfter "90s" }}`, 90 * time.Second},
		{`{{ requeueAfter 30 }}`, 30 * time.Second},
		{`{{ requeueAfter .Spec.seconds }}`, 45 * time.Second},
		{`{{ requeueAfter 1.5 }}`, 1500 * time.Millisecond},
		{`{{ requeueAfter "1h" }}{{ requeueAfter "5m" }}{{ requeueAfter "10m" }}`, 5 * time.Minute},
		{`{{ requeueAfter 0 }}{{ requeueAfter "-1m" }}{{ requeueAfter "" }}{{ requeueAfter .Spec.absent }}`, 0},
		{`{{ requeueAfter (durationUntil "2025-01-01T00:10:00Z") }}`, 10 * time.Minute},
		{`{{ requeueAfter (durationUntil "2024-12-31T23:00:00Z") }}`, 0},
		{`{{ requeueAfter (durationUntil (now | dateModify "+2h")) }}`, 2 * time.Hour},
	}
	in := Input{Object: map[string]any{"spec": map[string]any{"seconds": int64(45)}}, Now: fixedNow}
	for _, tt := range tests {
		res := renderStatus(t, tt.tmpl, in)
		if res.RequeueAfter != tt.want {
			t.Errorf("%s: RequeueAfter = %v, want %v", tt.tmpl, res.RequeueAfter, tt.want)
		}
		if res.Status != nil {
			t.Errorf("%s: requeueAfter printed %v", tt.tmpl, res.Status)
		}
	}
}

func TestDurationUntil(t *testing.T) {
	tests := []struct {
		tmpl string
		want string
	}{
		{`{{ durationUntil "2025-01-01T01:30:00Z" }}`, "1h30m0s"},
		{`{{ durationUntil "2025-01-01T01:00:00+01:00" }}`, "0s"},
		{`{{ durationUntil "2024-12-31T23:59:30.5Z" }}`, "-29.5s"},
		{`{{ durationUntil (toDate "2006-01-02" "2025-01-02") }}`, "24h0m0s"},
	}
	for _, tt := range tests {
		res := renderStatus(t, "v: \""+tt.tmpl+"\"", Input{Now: fixedNow})
		if got := res.Status["v"]; got != tt.want {
			t.Errorf("%s = %v, want %v", tt.tmpl, got, tt.want)
		}
	}
}

// With a zero Input.Now the render uses the wall clock, once.
func TestDurationUntilDefaultsToNow(t *testing.T) {
	res := renderStatus(t, `{{ requeueAfter (durationUntil (now | dateModify "+1h")) }}`, Input{})
	if res.RequeueAfter != time.Hour {
		t.Errorf("RequeueAfter = %v, want exactly 1h: now and durationUntil must share one clock", res.RequeueAfter)
	}
}

// TestSameTextEveryRender: sprig's keys and values list a map in Go's
// random order, and its date functions read the machine's clock; here the
// first two list in key order and the clock is the render's, so that a
// template prints the same child at every render of the same input, and
// the render names the functions that read the clock.
func TestSameTextEveryRender(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"d": int64(4), "b": int64(2), "a": int64(1), "c": int64(3), "e": int64(5)}}
	tests := []struct {
		tmpl   string
		want   any
		random string // the functions the render reports
	}{
		{`v: {{ keys .Spec | join "," }}`, "a,b,c,d,e", ""},
		{`v: {{ keys .Spec (dict "z" 1 "y" 2) | join "," }}`, "a,b,c,d,e,y,z", ""},
		{`v: {{ values .Spec | toJson | quote }}`, "[1,2,3,4,5]", ""},
		{`v: {{ toYaml (dict "1" 1 "0C2" 2 "001A" 3) | quote }}`, "001A: 3\n0C2: 2\n\"1\": 1", ""},
		{`v: {{ date "2006-01-02T15:04:05Z07:00" 0 | quote }}`, time.Unix(0, 0).Format(time.RFC3339), ""},
		{`v: {{ dateInZone "15:04:05.000000" "not a time" "UTC" | quote }}`, fixedNow.UTC().Format("15:04:05.000000"), "dateInZone"},
		{`v: {{ htmlDate "x" | quote }}`, fixedNow.Format("2006-01-02"), "htmlDate"},
		{`v: {{ ago (now | dateModify "-90s") | quote }}`, "1m30s", "now,ago"},
		{`v: {{ ago "x" | quote }}`, "0s", "ago"},
		{`v: {{ durationRound (now | dateModify "-90m") | quote }}`, "1h", "now,durationRound"},
		{`v: {{ durationRound "90m" | quote }}`, "1h", ""},
		{`v: {{ randInt 5 6 }}`, int64(5), "randInt"},
	}
	for _, tt := range tests {
		var first any
		for i := range 20 { // a map's iteration order changes with each range
			res := renderStatus(t, tt.tmpl, Input{Object: obj, Now: fixedNow})
			got := res.Status["v"]
			if i == 0 {
				first = got
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("%s: got %#v, want %#v", tt.tmpl, got, tt.want)
				}
				if r := strings.Join(res.Nondeterministic["status.yaml"], ","); r != tt.random {
					t.Errorf("%s: reports %q as nondeterministic, want %q", tt.tmpl, r, tt.random)
				}
			} else if !reflect.DeepEqual(got, first) {
				t.Fatalf("%s: %#v, then %#v", tt.tmpl, first, got)
			}
		}
	}
}
