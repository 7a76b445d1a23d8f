package fastyaml

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	yamlv2 "go.yaml.in/yaml/v2"
)

// A YAML alias (*a) is decoded again at every use, so a document of a few
// hundred bytes whose anchors refer to each other ten deep decodes into
// billions of values (yaml.v2 only refuses documents made mostly of
// aliases; a fan-out of ordinary values passes). What a document with
// aliases decodes into is not bounded by its size, so Decode (and the
// render's fromYaml) counts it first: yaml.v2 decodes it into aliasProbe
// values, which allocate next to nothing and stop the decoding once past
// the count the caller allows.

// errAliasBomb stops a probe.
var errAliasBomb = errors.New("too many values")

// probe is the one probe running: the decoder gives an Unmarshaler no
// context of its own, so the count is shared and probes take turns.
// Documents with both an anchor and an alias are rare in templates.
var probe struct {
	sync.Mutex
	n, limit int64
}

// AliasNodes is about how many values yaml.v2 decodes from s, its
// aliases expanded, when s may hold aliases, else 0 (what a document
// without aliases decodes into is bounded by its size). It fails past
// limit values.
func AliasNodes(s string, limit int64) (int64, error) {
	if !strings.Contains(s, "&") || !strings.Contains(s, "*") {
		return 0, nil
	}
	probe.Lock()
	defer probe.Unlock()
	probe.n, probe.limit = 0, max(limit, 0)
	var p aliasProbe
	// Any other error is yaml.v2's to report again when the document is
	// decoded; it stops at the same place.
	if err := yamlv2.Unmarshal([]byte(s), &p); errors.Is(err, errAliasBomb) {
		return probe.n, fmt.Errorf("a document of %d bytes whose aliases expand to more than %d values", len(s), limit)
	}
	return probe.n, nil
}

// count counts n values decoded.
func count(n int64) error {
	probe.n += n
	if probe.n > probe.limit {
		return errAliasBomb
	}
	return nil
}

// aliasProbe is any YAML value: it decodes itself as a list or a mapping
// of probes, or else as a scalar. A null is decoded without calling
// UnmarshalYAML, so lists and mappings count their elements themselves.
type aliasProbe struct{}

func (aliasProbe) UnmarshalYAML(unmarshal func(any) error) error {
	if err := count(1); err != nil {
		return err
	}
	var seq []aliasProbe
	err := unmarshal(&seq)
	if err == nil {
		return count(int64(len(seq)))
	}
	if _, ok := err.(*yamlv2.TypeError); !ok {
		return err
	}
	var m map[aliasKey]aliasProbe
	err = unmarshal(&m)
	if err == nil {
		return count(2 * int64(len(m)))
	}
	if _, ok := err.(*yamlv2.TypeError); !ok {
		return err
	}
	return nil // a scalar
}

// aliasKey is a mapping key, numbered so that every entry stays in the map
// and is counted.
type aliasKey int64

func (k *aliasKey) UnmarshalYAML(unmarshal func(any) error) error {
	var v aliasProbe
	if err := v.UnmarshalYAML(unmarshal); err != nil {
		return err
	}
	*k = aliasKey(probe.n)
	return nil
}
