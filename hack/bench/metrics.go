package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// requestKey is a row of the request tables: what kube-apiserver labels a
// request with in apiserver_request_total.
type requestKey struct {
	Verb        string `json:"verb"`
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

func (k requestKey) String() string {
	r := k.Resource
	if k.Group != "" {
		r += "." + k.Group
	}
	if k.Subresource != "" {
		r += "/" + k.Subresource
	}
	if r == "" {
		r = "(non-resource)"
	}
	return k.Verb + " " + r
}

// IsWrite reports whether the row's requests change state.
func (k requestKey) IsWrite() bool {
	switch k.Verb {
	case "GET", "LIST", "WATCH", "CONNECT":
		return false
	}
	return true
}

// snapshot is what kube-apiserver's /metrics says at one moment.
type snapshot struct {
	// requests counts requests by verb and resource. A watch is counted by
	// apiserver_request_total only when it ends; adding the watches open now
	// (apiserver_longrunning_requests) makes a WATCH count when it starts.
	requests map[requestKey]float64
	// dispatched counts the requests APF executed, by flow schema: the
	// one way to tell whose requests they were, since the other metrics
	// have no user.
	dispatched map[string]float64
	// rejected counts the requests APF refused (429), by flow schema.
	rejected map[string]float64
}

// scrape reads kube-apiserver's /metrics.
func scrape(ctx context.Context, cs kubernetes.Interface) (snapshot, error) {
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return snapshot{}, fmt.Errorf("scrape /metrics: %w", err)
	}
	s := snapshot{requests: map[requestKey]float64{}, dispatched: map[string]float64{}, rejected: map[string]float64{}}
	for line := range strings.Lines(string(body)) {
		name, labels, value, ok := parseSample(line)
		if !ok {
			continue
		}
		key := requestKey{Verb: labels["verb"], Group: labels["group"], Resource: labels["resource"], Subresource: labels["subresource"]}
		switch name {
		case "apiserver_request_total":
			s.requests[key] += value
		case "apiserver_longrunning_requests":
			if key.Verb == "WATCH" {
				s.requests[key] += value
			}
		case "apiserver_flowcontrol_dispatched_requests_total":
			s.dispatched[labels["flow_schema"]] += value
		case "apiserver_flowcontrol_rejected_requests_total":
			s.rejected[labels["flow_schema"]] += value
		}
	}
	if len(s.requests) == 0 || len(s.dispatched) == 0 {
		return snapshot{}, fmt.Errorf("scrape /metrics: no apiserver_request_total or no APF counters (is priority and fairness on?)")
	}
	return s, nil
}

// parseSample parses one line of the Prometheus text format:
// name{label="value",...} value. Comments and other lines give !ok.
func parseSample(line string) (name string, labels map[string]string, value float64, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	labels = map[string]string{}
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		name, rest = line[:i], line[i+1:]
		for {
			rest = strings.TrimLeft(rest, ", ")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			k, v, ok := strings.Cut(rest, "=\"")
			if !ok {
				return "", nil, 0, false
			}
			var val strings.Builder
			i := 0
			for ; i < len(v) && v[i] != '"'; i++ {
				if v[i] == '\\' && i+1 < len(v) {
					i++
					switch v[i] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(v[i])
					}
					continue
				}
				val.WriteByte(v[i])
			}
			if i >= len(v) {
				return "", nil, 0, false
			}
			labels[k] = val.String()
			rest = v[i+1:]
		}
	} else {
		var found bool
		name, rest, found = strings.Cut(line, " ")
		if !found {
			return "", nil, 0, false
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", nil, 0, false
	}
	value, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, value, true
}

// requestDiff is what happened between two snapshots.
type requestDiff struct {
	// ByKey counts requests by verb and resource, from every client: the
	// measured one, the bench's own and kube-apiserver's own loops.
	ByKey map[requestKey]int64
	// Measured counts the measured client's requests (its service account,
	// from APF), Writes its writes among them.
	Measured int64
	Writes   int64
	// Rejected counts requests APF refused (429) from any client.
	Rejected int64
}

func diff(before, after snapshot) requestDiff {
	d := requestDiff{ByKey: map[requestKey]int64{}}
	for k, v := range after.requests {
		if n := int64(math.Round(v - before.requests[k])); n != 0 {
			d.ByKey[k] = n
		}
	}
	for _, fs := range []string{flowSchemaWrites, flowSchemaReads} {
		d.Measured += int64(math.Round(after.dispatched[fs] - before.dispatched[fs]))
	}
	d.Writes = int64(math.Round(after.dispatched[flowSchemaWrites] - before.dispatched[flowSchemaWrites]))
	for fs, v := range after.rejected {
		d.Rejected += int64(math.Round(v - before.rejected[fs]))
	}
	return d
}

// Total is the number of requests of all clients.
func (d requestDiff) Total() int64 {
	var n int64
	for _, v := range d.ByKey {
		n += v
	}
	return n
}

// WritesByKey is the write rows of d.
func (d requestDiff) WritesByKey() map[requestKey]int64 {
	out := map[requestKey]int64{}
	for k, v := range d.ByKey {
		if k.IsWrite() {
			out[k] = v
		}
	}
	return out
}

// sortedKeys orders rows by count, largest first, then by name.
func sortedKeys(m map[requestKey]int64) []requestKey {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b requestKey) int {
		if m[a] != m[b] {
			return int(m[b] - m[a])
		}
		return strings.Compare(a.String(), b.String())
	})
	return keys
}
