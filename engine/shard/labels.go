package shard

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// ShardLabel on an object names the shard that holds it: the only
	// replica that may reconcile it (its children carry HeldByLabel).
	// Absent: not assigned yet.
	ShardLabel = "shard.tmplop.io/shard"
	// HeldByLabel on a child names the shard that applied it, so that
	// each replica watches only its own shard's children. It is a label
	// of its own, not ShardLabel: a child may be an object of a sharded
	// kind itself, whose ShardLabel is the sharder's to write.
	HeldByLabel = "shard.tmplop.io/held-by"
	// RingLabel on a Lease names the ring the shard belongs to (the
	// operator's field manager), so that Members watches only its own
	// ring's Leases.
	RingLabel = "shard.tmplop.io/ring"
	// IncarnationAnnotation on a Lease is a random value per process: a
	// Lease renewed by anyone else (another process given the same id) is
	// lost, not shared.
	IncarnationAnnotation = "shard.tmplop.io/incarnation"
)

// leaseInfix joins the ring and the id in a Lease's name.
const leaseInfix = "-shard-"

// LeaseName is the name of shard id's Lease in ring.
func LeaseName(ring, id string) string { return ring + leaseInfix + id }

// idOf is the shard id a Lease name of ring holds, if it is one.
func idOf(ring, leaseName string) (string, bool) {
	id, ok := strings.CutPrefix(leaseName, ring+leaseInfix)
	if !ok || len(validation.IsDNS1123Label(id)) > 0 {
		return "", false
	}
	return id, true
}

// Key is the ring key of an object: its group, kind, namespace and name.
// The UID is left out so that an object deleted and created again under
// the same name lands on the same shard.
func Key(group, kind, namespace, name string) string {
	return group + "/" + kind + "/" + namespace + "/" + name
}

// ID turns a replica's name (a pod name, a host name) into a shard id, a
// DNS label: lower case, every other character than [a-z0-9-] a '-', at
// most 63 characters (a longer name is cut and ends in a hash of the whole,
// so that two long names stay apart).
func ID(name string) (string, error) {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			b[i] = '-'
		}
	}
	id := strings.Trim(string(b), "-")
	if len(id) > validation.DNS1123LabelMaxLength {
		h := fnv.New32a()
		h.Write([]byte(name))
		id = fmt.Sprintf("%s-%08x", strings.TrimRight(id[:validation.DNS1123LabelMaxLength-9], "-"), h.Sum32())
	}
	if id == "" {
		return "", fmt.Errorf("shard id from %q: no letter or digit in it", name)
	}
	return id, nil
}

// AssignPatch is the JSON merge patch that labels an object for shard to,
// on the condition that the object is still at resourceVersion: of the
// sharder's and the holder's writes decided on the same version, one wins
// and the other gets a Conflict, reads again and decides again.
func AssignPatch(to, resourceVersion string) ([]byte, error) {
	return labelPatch(ShardLabel, to, resourceVersion)
}

// HeldByPatch is AssignPatch for a child: it moves the child to shard to
// with its parent (HeldByLabel).
func HeldByPatch(to, resourceVersion string) ([]byte, error) {
	return labelPatch(HeldByLabel, to, resourceVersion)
}

func labelPatch(label, to, resourceVersion string) ([]byte, error) {
	if resourceVersion == "" {
		return nil, fmt.Errorf("%s patch: no resourceVersion to write on the condition of", label)
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": resourceVersion,
		"labels":          map[string]string{label: to},
	}})
}
