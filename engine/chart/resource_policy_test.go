package chart

import "testing"

func TestKeep(t *testing.T) {
	for name, tc := range map[string]struct {
		ann  map[string]string
		want bool
	}{
		"no annotations":             {ann: nil, want: false},
		"other annotations":          {ann: map[string]string{"helm.sh/hook": "pre-install"}, want: false},
		"keep":                       {ann: map[string]string{ResourcePolicyAnnotation: "keep"}, want: true},
		"keep, spaced and capitals":  {ann: map[string]string{ResourcePolicyAnnotation: " Keep\n"}, want: true},
		"empty policy":               {ann: map[string]string{ResourcePolicyAnnotation: ""}, want: false},
		"another policy":             {ann: map[string]string{ResourcePolicyAnnotation: "delete"}, want: false},
		"keep as part of a word":     {ann: map[string]string{ResourcePolicyAnnotation: "keeper"}, want: false},
		"keep under another key":     {ann: map[string]string{"helm.sh/resource-policy-x": "keep"}, want: false},
		"operator's prune: disabled": {ann: map[string]string{"operator.tmplop.io/prune": "disabled"}, want: false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Keep(tc.ann); got != tc.want {
				t.Errorf("Keep(%v) = %v, want %v", tc.ann, got, tc.want)
			}
		})
	}
}
