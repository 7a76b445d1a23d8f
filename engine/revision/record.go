package revision

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tmplop/operator/engine/layout"
)

const (
	// LabelKind is the kind (as <resource>.<group>, LabelValue) a record
	// is a revision of: the selector of a kind's records.
	LabelKind = "operator.tmplop.io/kind"
	// AnnotationFingerprint is the whole fingerprint of the folder a record
	// holds (the name holds its first hashLen digits).
	AnnotationFingerprint = "operator.tmplop.io/fingerprint"
	// AnnotationFiles says "omitted" on a record whose folder was too large
	// to keep (MaxData).
	AnnotationFiles = "operator.tmplop.io/files"
	// labelManagedBy is the managed-by label every object the operator
	// makes carries (ownership.LabelManagedBy, not imported: this package
	// needs nothing else of ownership).
	labelManagedBy = "app.kubernetes.io/managed-by"

	// CompressOver is the size of the files' JSON above which it is
	// gzipped.
	CompressOver = 256 << 10
	// MaxData is the largest data a record holds: an object of etcd is at
	// most 1.5 MiB, and the record's metadata needs its room.
	MaxData = 1 << 20

	hashLen = 16 // hex digits of the hash in a name: 64 bits
)

// Revision is one recorded version of a kind's folder.
type Revision struct {
	// Name is the record's name (Name).
	Name string
	// Number is the ordinal: the order in which the kind's folder versions
	// were served, from 1.
	Number int64
	// Fingerprint is the folder's (layout.Files.Fingerprint).
	Fingerprint string
	// FilesOmitted: the folder was larger than MaxData, even gzipped, and
	// its files are not in the record.
	FilesOmitted bool
}

// LabelValue is the LabelKind value of the kind of resource gr:
// <resource>.<group>, or <resource> for the core group; one longer than a
// label value may be ends with a hash of the whole.
func LabelValue(gr schema.GroupResource) string {
	v := gr.String()
	if len(v) <= validation.LabelValueMaxLength {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	head := strings.TrimRight(v[:validation.LabelValueMaxLength-hashLen-1], ".-_")
	return head + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// Name is the record's name of the folder of fingerprint for the kind of
// resource gr, kept by the operator instance of field manager manager:
// <resource>.<group>-<hash of the manager and the fingerprint>, a DNS-1123
// subdomain. Two instances (two managers) sharing a state namespace and
// serving the same folder keep a record each: their lists (by the
// managed-by label) never see the other's, so one name for both would
// leave each unable to find the record it collides with.
func Name(gr schema.GroupResource, manager, fingerprint string) (string, error) {
	if len(fingerprint) < hashLen {
		return "", fmt.Errorf("fingerprint %q is shorter than %d hex digits", fingerprint, hashLen)
	}
	head := gr.String()
	if max := validation.DNS1123SubdomainMaxLength - hashLen - 1; len(head) > max {
		head = strings.TrimRight(head[:max], ".-")
	}
	sum := sha256.Sum256([]byte(manager + "\x00" + fingerprint))
	name := head + "-" + hex.EncodeToString(sum[:])[:hashLen]
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "", fmt.Errorf("cannot name the revision of %s %q: %s", gr, name, strings.Join(errs, "; "))
	}
	return name, nil
}

// contents is the JSON of a record's data, before any compression.
type contents struct {
	Files       map[string]string `json:"files,omitempty"`
	BinaryFiles map[string][]byte `json:"binaryFiles,omitempty"`
}

// packed is the data of a record whose files were gzipped.
type packed struct {
	Encoding string `json:"encoding"`
	Data     []byte `json:"data"` // base64 in JSON
}

const gzipEncoding = "gzip+base64"

// Encode is the data of a record of files: their JSON, gzipped when
// larger than CompressOver. It fails when even the gzip is larger than
// MaxData.
func Encode(files layout.Files) ([]byte, error) {
	c := contents{Files: map[string]string{}}
	for name, data := range files {
		if utf8.Valid(data) {
			c.Files[name] = string(data)
			continue
		}
		if c.BinaryFiles == nil {
			c.BinaryFiles = map[string][]byte{}
		}
		c.BinaryFiles[name] = data
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode the folder's files: %w", err)
	}
	if len(raw) <= CompressOver {
		return raw, nil
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, fmt.Errorf("gzip the folder's files: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip the folder's files: %w", err)
	}
	out, err := json.Marshal(packed{Encoding: gzipEncoding, Data: buf.Bytes()})
	if err != nil {
		return nil, fmt.Errorf("encode the folder's files: %w", err)
	}
	if len(out) > MaxData {
		return nil, &TooLargeError{Size: len(raw), Packed: len(out)}
	}
	return out, nil
}

// TooLargeError is a folder whose files do not fit in a record.
type TooLargeError struct {
	Size, Packed int // the JSON's bytes, and gzipped as stored
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the folder's files take %d bytes, %d gzipped, more than the %d a revision record holds", e.Size, e.Packed, MaxData)
}

// Decode returns the files of a record's data (Encode's).
func Decode(data []byte) (layout.Files, error) {
	var p packed
	if err := json.Unmarshal(data, &p); err == nil && p.Encoding != "" {
		if p.Encoding != gzipEncoding {
			return nil, fmt.Errorf("revision data in unknown encoding %q", p.Encoding)
		}
		zr, err := gzip.NewReader(bytes.NewReader(p.Data))
		if err != nil {
			return nil, fmt.Errorf("gunzip revision data: %w", err)
		}
		// Bounded: a record holds what Encode wrote, at most MaxData
		// gzipped; a hand-made one must not inflate without end.
		if data, err = io.ReadAll(io.LimitReader(zr, 64*MaxData)); err != nil {
			return nil, fmt.Errorf("gunzip revision data: %w", err)
		}
	}
	var c contents
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("decode revision data: %w", err)
	}
	out := layout.Files{}
	for name, s := range c.Files {
		out[name] = []byte(s)
	}
	for name, b := range c.BinaryFiles {
		out[name] = b
	}
	return out, nil
}

// Files returns the files a record holds.
func Files(r *appsv1.ControllerRevision) (layout.Files, error) {
	if r.Annotations[AnnotationFiles] == "omitted" {
		return nil, fmt.Errorf("revision %s holds no files: its folder was larger than %d bytes", r.Name, MaxData)
	}
	return Decode(r.Data.Raw)
}

// record is a new record of the folder of fingerprint, numbered number;
// data nil: its files omitted.
func record(namespace, name, manager string, gr schema.GroupResource, fingerprint string, number int64, data []byte) *appsv1.ControllerRevision {
	r := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
			Labels:      map[string]string{LabelKind: LabelValue(gr), labelManagedBy: manager},
			Annotations: map[string]string{AnnotationFingerprint: fingerprint}},
		Revision: number,
	}
	if data == nil {
		r.Annotations[AnnotationFiles] = "omitted"
		r.Data = runtime.RawExtension{Raw: []byte("{}")}
	} else {
		r.Data = runtime.RawExtension{Raw: data}
	}
	return r
}

// revisionOf is what a record says of its revision.
func revisionOf(r *appsv1.ControllerRevision) Revision {
	return Revision{Name: r.Name, Number: r.Revision, Fingerprint: r.Annotations[AnnotationFingerprint],
		FilesOmitted: r.Annotations[AnnotationFiles] == "omitted"}
}

// Verified returns the files a record of the kind of resource gr, kept by
// manager, holds, once they are the folder its fingerprint annotation and
// its name say: the record is rendered again (a rollout's older
// revision), and a record edited by hand, or another's, must not be.
func Verified(r *appsv1.ControllerRevision, gr schema.GroupResource, manager string) (layout.Files, error) {
	files, err := Files(r)
	if err != nil {
		return nil, err
	}
	fp := r.Annotations[AnnotationFingerprint]
	if got := files.Fingerprint(); got != fp {
		return nil, fmt.Errorf("revision %s: its files' fingerprint %s is not the recorded %s: the record was changed since it was written; not rendered", r.Name, got, fp)
	}
	if want, err := Name(gr, manager, fp); err != nil || want != r.Name {
		return nil, fmt.Errorf("revision %s: not the name of its fingerprint for %s kept by %s (%s); not rendered", r.Name, gr, manager, want)
	}
	return files, nil
}
