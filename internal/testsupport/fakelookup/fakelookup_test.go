package fakelookup

import (
	"errors"
	"testing"
)

func object(apiVersion, kind, ns, name string, labels map[string]any) map[string]any {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	if labels != nil {
		md["labels"] = labels
	}
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
}

func TestGetAndList(t *testing.T) {
	o := &Objects{Items: []map[string]any{
		object("v1", "ConfigMap", "a", "one", map[string]any{"app": "web"}),
		object("v1", "ConfigMap", "a", "two", map[string]any{"app": "db"}),
		object("v1", "ConfigMap", "b", "one", map[string]any{"app": "web"}),
		object("v1", "Secret", "a", "one", nil),
		object("v1", "Namespace", "", "a", nil),
	}}
	gets := []struct {
		name, apiVersion, kind, ns, get string
		found                           bool
	}{
		{"namespaced", "v1", "ConfigMap", "b", "one", true},
		{"another kind of the same name", "v1", "Secret", "a", "one", true},
		{"cluster-scoped", "v1", "Namespace", "", "a", true},
		{"a namespaced object asked cluster-wide", "v1", "ConfigMap", "", "one", false},
		{"another version", "v2", "ConfigMap", "a", "one", false},
		{"none of that name", "v1", "ConfigMap", "a", "three", false},
	}
	for _, tt := range gets {
		t.Run("Get "+tt.name, func(t *testing.T) {
			got, err := o.Get(tt.apiVersion, tt.kind, tt.ns, tt.get)
			if err != nil || (got != nil) != tt.found {
				t.Fatalf("Get = %v, %v; want found %v", got, err, tt.found)
			}
			if got != nil && (meta(got, "name") != tt.get || meta(got, "namespace") != tt.ns || got["kind"] != tt.kind) {
				t.Errorf("Get returned %v", got)
			}
		})
	}
	lists := []struct {
		name, ns, selector string
		want               int
	}{
		{"one namespace", "a", "", 2},
		{"every namespace", "", "", 3},
		{"a selector", "", "app=web", 2},
		{"a selector in one namespace", "a", "app in (db)", 1},
		{"a selector nothing matches", "", "app=none", 0},
	}
	for _, tt := range lists {
		t.Run("List "+tt.name, func(t *testing.T) {
			got, err := o.List("v1", "ConfigMap", tt.ns, tt.selector)
			if err != nil || len(got) != tt.want {
				t.Fatalf("List = %d objects, %v; want %d", len(got), err, tt.want)
			}
		})
	}
	if _, err := o.List("v1", "ConfigMap", "", "app in ("); err == nil {
		t.Error("a selector that does not parse gave no error")
	}
}

func TestRefusals(t *testing.T) {
	broken := errors.New("cache down")
	denied := errors.New("not declared")
	items := []map[string]any{object("v1", "ConfigMap", "a", "one", nil)}
	tests := []struct {
		name string
		o    *Objects
		want error
	}{
		{"a failing cache", &Objects{Items: items, Err: broken}, broken},
		{"the policy refuses", &Objects{Items: items, Allow: func(_, kind, _ string) error {
			if kind == "ConfigMap" {
				return denied
			}
			return nil
		}}, denied},
		{"the policy allows", &Objects{Items: items, Allow: func(string, string, string) error { return nil }}, nil},
		{"no policy", &Objects{Items: items}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.o.Get("v1", "ConfigMap", "a", "one")
			if !errors.Is(err, tt.want) || (err == nil) != (got != nil) {
				t.Errorf("Get = %v, %v; want error %v", got, err, tt.want)
			}
			list, err := tt.o.List("v1", "ConfigMap", "a", "")
			if !errors.Is(err, tt.want) || (err == nil) != (len(list) == 1) {
				t.Errorf("List = %d objects, %v; want error %v", len(list), err, tt.want)
			}
		})
	}
}
