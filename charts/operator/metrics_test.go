package operator_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tmplop/operator/engine/metrics"
	"github.com/tmplop/operator/engine/reconcile"
)

// targetLabels are the labels Prometheus gives every series of a target
// (the Prometheus Operator's endpoints role), beside the metric's own.
var targetLabels = []string{"job", "instance", "namespace", "pod", "service", "endpoint", "container"}

// TestDashboardMetrics: every series the dashboard and the alerts query is
// one the operator registers, with the labels they match and group by.
func TestDashboardMetrics(t *testing.T) {
	reg := registeredMetrics(t)
	t.Run("dashboard", func(t *testing.T) {
		data, err := os.ReadFile("dashboards/operator.json")
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("dashboards/operator.json: %v", err)
		}
		exprs := dashboardExprs(d, "")
		if len(exprs) < 10 {
			t.Fatalf("%d queries in the dashboard: %v", len(exprs), exprs)
		}
		for where, e := range exprs {
			for _, p := range checkExpr(reg, e) {
				t.Errorf("%s: %q: %s", where, e, p)
			}
		}
	})
	t.Run("alerts", func(t *testing.T) {
		objs := mustRender(t, releaseName, map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true}}})
		rules := ruleExprs(t, get(t, objs, "monitoring.coreos.com/v1", "PrometheusRule", releaseNamespace, "operator"))
		if len(rules) == 0 {
			t.Fatal("no alert")
		}
		for _, r := range rules {
			for _, p := range checkExpr(reg, r.expr) {
				t.Errorf("alert %s: %q: %s", r.alert, r.expr, p)
			}
		}
	})
	// The check must be able to fail.
	for _, e := range []string{
		`sum(rate(operator_reconciles_total[5m]))`,
		`sum by (reason) (rate(operator_reconcile_total[5m]))`,
		`workqueue_depth{kind="x"}`,
		`label_values(operator_reconcile_total, reason)`,
	} {
		if len(checkExpr(reg, e)) == 0 {
			t.Errorf("%q passes the check", e)
		}
	}
}

// registeredMetrics are the operator's metrics, name -> label names, as
// `operator run` registers them (metrics.NewRegistry): every descriptor,
// whether or not it has a series yet.
func registeredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	reg := metrics.NewRegistry(noKinds{})
	ch := make(chan *prometheus.Desc)
	go func() {
		reg.Describe(ch)
		close(ch)
	}()
	// A Desc says its name and labels only in its String.
	re := regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*variableLabels: \{([^}]*)\}\}$`)
	names := map[string][]string{}
	for d := range ch {
		m := re.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("a Desc reads %s: update the pattern", d)
		}
		var labels []string
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
				labels = append(labels, l)
			}
		}
		names[m[1]] = labels
	}
	for _, n := range []string{"operator_reconcile_total", "operator_render_duration_seconds", "workqueue_depth", "rest_client_requests_total", "process_resident_memory_bytes"} {
		if _, ok := names[n]; !ok {
			t.Fatalf("%s not registered: the Desc pattern reads %d names", n, len(names))
		}
	}
	return names
}

// noKinds is a metrics.Source serving no kind: the descriptors do not
// depend on the kinds.
type noKinds struct{}

func (noKinds) Kinds() []schema.GroupKind               { return nil }
func (noKinds) Stats(schema.GroupKind) *reconcile.Stats { return nil }

// dashboardExprs are the dashboard's PromQL queries by their JSON path:
// the panels' targets and the variables' queries.
func dashboardExprs(v any, path string) map[string]string {
	out := map[string]string{}
	switch c := v.(type) {
	case map[string]any:
		for k, e := range c {
			p := path + "." + k
			if s, ok := e.(string); ok && (k == "expr" || k == "definition" || (k == "query" && strings.HasPrefix(path, ".templating"))) {
				if s != "prometheus" { // the datasource variable's type
					out[p] = s
				}
				continue
			}
			for k, v := range dashboardExprs(e, p) {
				out[k] = v
			}
		}
	case []any:
		for i, e := range c {
			for k, v := range dashboardExprs(e, fmt.Sprintf("%s[%d]", path, i)) {
				out[k] = v
			}
		}
	}
	return out
}

type rule struct{ alert, expr string }

func ruleExprs(t *testing.T, pr *unstructured.Unstructured) []rule {
	t.Helper()
	groups, _, err := unstructured.NestedSlice(pr.Object, "spec", "groups")
	if err != nil {
		t.Fatal(err)
	}
	var rules []rule
	for _, g := range groups {
		rs, _, err := unstructured.NestedSlice(g.(map[string]any), "rules")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			m := r.(map[string]any)
			alert, _ := m["alert"].(string)
			expr, _ := m["expr"].(string)
			rules = append(rules, rule{alert, expr})
		}
	}
	return rules
}

// PromQL's words that are not metric names.
var (
	grouping  = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
	operators = []string{"and", "or", "unless", "bool", "offset", "atan2"}
	// aggregations may come before their by (...) clause, not a parenthesis.
	aggregations = []string{"sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "group", "limitk", "limit_ratio"}
)

// checkExpr lists the problems of a PromQL expression (or a Grafana
// label_values query): metrics the operator does not register, labels it
// matches or groups by that none of its metrics has.
func checkExpr(reg map[string][]string, expr string) []string {
	var problems []string
	var valuesOf string // label_values' label
	if m := regexp.MustCompile(`^label_values\((.*),\s*([A-Za-z_]\w*)\)$`).FindStringSubmatch(strings.TrimSpace(expr)); m != nil {
		expr, valuesOf = m[1], m[2]
	}
	sels, groupBy := parsePromQL(expr)
	if len(sels) == 0 {
		problems = append(problems, "no metric")
	}
	known := slices.Clone(targetLabels)
	for _, s := range sels {
		labels, ok := metricLabels(reg, s.metric)
		if !ok {
			problems = append(problems, s.metric+" is not registered by the operator")
			continue
		}
		labels = append(labels, targetLabels...)
		known = append(known, labels...)
		for _, l := range s.matchers {
			if !slices.Contains(labels, l) {
				problems = append(problems, fmt.Sprintf("%s has no label %s", s.metric, l))
			}
		}
	}
	if valuesOf != "" {
		groupBy = append(groupBy, valuesOf)
	}
	for _, l := range groupBy {
		if !slices.Contains(known, l) {
			problems = append(problems, fmt.Sprintf("no metric of the expression has label %s", l))
		}
	}
	return problems
}

// metricLabels are the labels of a registered metric, or of the series of
// a registered histogram (_bucket with le, _sum, _count). up is
// Prometheus' own, for every target.
func metricLabels(reg map[string][]string, name string) ([]string, bool) {
	if name == "up" {
		return nil, true
	}
	if l, ok := reg[name]; ok {
		return slices.Clone(l), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if l, ok := reg[base]; ok {
				if suffix == "_bucket" {
					l = append(slices.Clone(l), "le")
				}
				return l, true
			}
		}
	}
	return nil, false
}

type selector struct {
	metric   string
	matchers []string // label names
}

// parsePromQL reads the metric selectors of a PromQL expression and the
// labels of its grouping clauses. It knows just enough PromQL for that:
// strings and [ranges] are skipped, a name followed by ( is a function.
func parsePromQL(expr string) (sels []selector, groupBy []string) {
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	skipSpace := func(i int) int {
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\n' || expr[i] == '\t') {
			i++
		}
		return i
	}
	skipString := func(i int) int { // expr[i] is the quote
		q := expr[i]
		for i++; i < len(expr) && expr[i] != q; i++ {
			if expr[i] == '\\' {
				i++
			}
		}
		return i + 1
	}
	ident := func(i int) (string, int) {
		j := i
		for j < len(expr) && isIdent(expr[j], j == i) {
			j++
		}
		return expr[i:j], j
	}
	// labelList reads "(a, b)" from i, a grouping clause's labels.
	labelList := func(i int) ([]string, int) {
		i = skipSpace(i)
		if i >= len(expr) || expr[i] != '(' {
			return nil, i
		}
		end := strings.IndexByte(expr[i:], ')')
		if end < 0 {
			return nil, len(expr)
		}
		var labels []string
		for _, l := range strings.Split(expr[i+1:i+end], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		return labels, i + end + 1
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(i)
		case c == '[':
			if end := strings.IndexByte(expr[i:], ']'); end >= 0 {
				i += end + 1
			} else {
				i = len(expr)
			}
		case c == '$': // a Grafana variable
			i++
			if i < len(expr) && expr[i] == '{' {
				i = strings.IndexByte(expr[i:], '}') + i + 1
			} else {
				_, i = ident(i)
			}
		case c >= '0' && c <= '9' || c == '.': // a number or a duration
			for i < len(expr) && (isIdent(expr[i], false) || expr[i] == '.') {
				i++
			}
		case isIdent(c, true):
			var name string
			name, i = ident(i)
			next := skipSpace(i)
			switch {
			case slices.Contains(grouping, name):
				var labels []string
				labels, i = labelList(i)
				groupBy = append(groupBy, labels...)
			case slices.Contains(operators, name), slices.Contains(aggregations, name):
			case next < len(expr) && expr[next] == '(': // a function
			default:
				s := selector{metric: name}
				if next < len(expr) && expr[next] == '{' {
					i = next + 1
					for i < len(expr) && expr[i] != '}' {
						switch {
						case expr[i] == '"' || expr[i] == '\'' || expr[i] == '`':
							i = skipString(i)
						case isIdent(expr[i], true):
							var l string
							l, i = ident(i)
							s.matchers = append(s.matchers, l)
						default:
							i++
						}
					}
					i++
				}
				sels = append(sels, s)
			}
		default:
			i++
		}
	}
	return sels, groupBy
}
