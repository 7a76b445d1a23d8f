package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/engine/layout"
)

// VersionOptions say which version to add to which kind folder
// (`operator create version`, docs/versions.md).
type VersionOptions struct {
	// Folder is the kind folder's path: templates/memcached.
	Folder string
	// Version is the new version: v1, v2beta1.
	Version string
	// Hub makes the new version the hub (kind.yaml's apiVersion, what the
	// templates see) and the storage version; the hub it replaces is then
	// listed with its schema. Without it the new version is one more
	// version of the hub's schema.
	Hub bool
}

// VersionResult is a version added: kind.yaml rewritten, and the two
// conversion templates.
type VersionResult struct {
	// Files: kind.yaml (an existing file, rewritten), then the new
	// conversion templates.
	Files []File
	// Hub is the hub after the change; Previous the hub before it.
	Hub, Previous string
}

// versionFolderHint is the end of the errors of a folder this command
// cannot edit.
const versionFolderHint = "add the version by hand (docs/versions.md)"

// AddVersionFiles works out the files of a version added to a folder,
// writing nothing: kind.yaml with the version listed, and the identity
// conversions between it and the hub. The new folder is loaded as the
// operator loads it, so what it returns is a folder that is served.
//
// kind.yaml is edited where its YAML nodes say (go.yaml.in/yaml/v3 gives
// each one's line and column), by splicing text into the file as it is:
// every byte the edit does not touch stays, comments, blank lines, order
// and quoting included. Re-encoding the node tree would keep comments and
// order but lose blank lines and reflow the rest. The result is checked by
// decoding both: every field but apiVersion and versions is as it was.
func AddVersionFiles(o VersionOptions) (*VersionResult, error) {
	if o.Folder == "" {
		return nil, errors.New("--folder is required (a kind folder, such as templates/memcached)")
	}
	if !versionRE.MatchString(o.Version) {
		return nil, fmt.Errorf("--version %q: not a Kubernetes API version: v<N>, v<N>alpha<M> or v<N>beta<M>, such as v1", o.Version)
	}
	files, err := catalog.ReadFolder(os.DirFS(o.Folder))
	if err != nil {
		return nil, fmt.Errorf("read kind folder %s: %w", o.Folder, err)
	}
	// A version the kind has: said before a stray template of it is.
	if spec, err := catalog.ReadSpec(files); err == nil {
		names := []string{schema.FromAPIVersionAndKind(spec.APIVersion, spec.Kind).Version}
		for _, v := range spec.Versions {
			names = append(names, v.Name)
		}
		if slices.Contains(names, o.Version) {
			return nil, fmt.Errorf("%s: the kind has version %s already", filepath.Join(o.Folder, catalog.KindFile), o.Version)
		}
	}
	// A conversion template of the version that exists already is one
	// this command would write: refused before the folder is compiled
	// (which would refuse it too, as a conversion of a version the kind
	// does not have).
	var exist []string
	for n := range files {
		if parts := strings.Split(n, "."); len(parts) == 4 && parts[0] == "convert" && parts[3] == "yaml" && (parts[1] == o.Version || parts[2] == o.Version) {
			exist = append(exist, filepath.Join(o.Folder, n))
		}
	}
	if len(exist) > 0 {
		slices.Sort(exist)
		return nil, &ExistsError{Paths: exist}
	}
	name := filepath.Base(filepath.Clean(o.Folder))
	k, err := catalog.Compile(name, o.Folder, files)
	if err != nil {
		return nil, fmt.Errorf("kind folder %s does not load; fix it first: %w", o.Folder, err)
	}
	kindPath := filepath.Join(o.Folder, catalog.KindFile)
	switch {
	case k.FormatName() != "templates":
		return nil, fmt.Errorf("%s: a %s folder has one version for now (docs/versions.md)", o.Folder, k.FormatName())
	case k.CRD != nil:
		return nil, fmt.Errorf("%s: the folder's versions are its %s's: add the version there, with its conversion templates; %s", o.Folder, catalog.CRDFile, versionFolderHint)
	case k.BuiltIn():
		return nil, fmt.Errorf("%s: %s is a built-in kind: its versions are Kubernetes'", o.Folder, k.GVK.GroupKind())
	}
	hub := k.Hub()
	for _, v := range k.Versions() {
		if v.Name == o.Version {
			return nil, fmt.Errorf("%s: the kind has version %s already", kindPath, o.Version)
		}
	}
	if o.Hub && len(k.Versions()) > 1 {
		// Every conversion goes to or from the hub: moving it would mean
		// rewriting each version's two templates, which is the author's.
		return nil, fmt.Errorf("%s: the kind has versions already (hub %s): a new hub would need every version's conversions rewritten to it; add %s without --hub, or %s", kindPath, hub, o.Version, versionFolderHint)
	}

	src := files[catalog.KindFile]
	edited, err := editKindYAML(src, k.GVK.Group, hub, o.Version, o.Hub)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; %s", kindPath, err, versionFolderHint)
	}
	newHub, other := hub, o.Version
	if o.Hub {
		newHub, other = o.Version, hub
	}
	to, from := conversionFile(other, newHub), conversionFile(newHub, other)
	res := &VersionResult{Hub: newHub, Previous: hub, Files: []File{
		{Path: kindPath, Data: edited},
		{Path: filepath.Join(o.Folder, to), Data: identityConversion(to, other, newHub)},
		{Path: filepath.Join(o.Folder, from), Data: identityConversion(from, newHub, other)},
	}}
	for _, f := range res.Files[1:] {
		if _, exists := files[filepath.Base(f.Path)]; exists {
			return nil, &ExistsError{Paths: []string{f.Path}}
		}
	}

	// The folder as it will be: it must load, with the versions asked.
	after := layout.Files{}
	for n, b := range files {
		after[n] = b
	}
	for _, f := range res.Files {
		after[filepath.Base(f.Path)] = f.Data
	}
	k2, err := catalog.Compile(name, o.Folder, after)
	if err != nil {
		return nil, fmt.Errorf("scaffold: the folder with version %s does not load: %w", o.Version, err)
	}
	if k2.Hub() != newHub || k2.Converter() == nil {
		return nil, fmt.Errorf("scaffold: the folder with version %s has hub %s and conversions %v; want hub %s with conversions", o.Version, k2.Hub(), k2.Converter() != nil, newHub)
	}
	return res, nil
}

// AddVersion adds a version to a kind folder: it rewrites kind.yaml and
// writes the two conversion templates, which must not exist
// (*ExistsError; nothing is written then). kind.yaml is replaced only once
// the templates are written, through a file renamed over it.
func AddVersion(o VersionOptions) (*VersionResult, error) {
	res, err := AddVersionFiles(o)
	if err != nil {
		return nil, err
	}
	var exist []string
	for _, f := range res.Files[1:] {
		if _, err := os.Lstat(f.Path); err == nil {
			exist = append(exist, f.Path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("scaffold: %w", err)
		}
	}
	if len(exist) > 0 {
		return nil, &ExistsError{Paths: exist}
	}
	var written []string
	for _, f := range res.Files[1:] {
		if err := writeNew(f); err != nil {
			for _, p := range written {
				_ = os.Remove(p)
			}
			return nil, fmt.Errorf("scaffold: %w", err)
		}
		written = append(written, f.Path)
	}
	if err := replaceFile(res.Files[0]); err != nil {
		for _, p := range written {
			_ = os.Remove(p)
		}
		return nil, fmt.Errorf("scaffold: %w", err)
	}
	return res, nil
}

// replaceFile writes f over an existing file through a temporary file
// renamed over it, keeping its mode: a failure leaves the old file whole.
func replaceFile(f File) error {
	info, err := os.Stat(f.Path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), "."+filepath.Base(f.Path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.Write(f.Data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(info.Mode().Perm()); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.Path)
}

// conversionFile is the name of the template from one version to another
// (catalog's contract: convert.<from>.<to>.yaml).
func conversionFile(from, to string) string { return "convert." + from + "." + to + ".yaml" }

// identityConversion is a conversion template that keeps spec and status
// as they are, commented with what to edit.
func identityConversion(file, from, to string) []byte {
	back := conversionFile(to, from)
	return fmt.Appendf(nil, `{{- /*
%[1]s: %[2]s -> %[3]s, as `+"`operator create version`"+` wrote it: the
identity, since both versions have the same schema today.

When a field changes between them (renamed, moved, retyped), convert it
here, and its way back in %[4]s. The dot is the
object at %[2]s (.Object, .Spec, .Status, .Name, .Labels, ...); the output is
the object at %[3]s. apiVersion, kind and metadata may be left out (the
engine fills them in; metadata may change only in labels and annotations),
and what %[3]s cannot hold is kept in an annotation unless the version is
lossy: docs/versions.md.

For example, were spec.size at %[2]s spec.replicas at %[3]s:
  {{- $spec := omit .Spec "size" }}
  {{- if hasKey .Spec "size" }}{{ $_ := set $spec "replicas" .Spec.size }}{{ end }}
*/ -}}
{{- if hasKey .Object "spec" }}
spec:
  {{- toYaml .Spec | nindent 2 }}
{{- end }}
{{- if hasKey .Object "status" }}
status:
  {{- toYaml .Status | nindent 2 }}
{{- end }}
`, file, from, to, back)
}

// editKindYAML adds version v to kind.yaml src, whose apiVersion is
// group/hub: listed in versions (made when absent, with the hub first),
// and, when toHub, the hub (apiVersion group/v and the storage version),
// the previous hub listed with a copy of the top-level spec schema.
// Without toHub, v is listed with that copy.
func editKindYAML(src []byte, group, hub, v string, toHub bool) ([]byte, error) {
	if bytes.Contains(src, []byte("\r")) {
		return nil, errors.New("kind.yaml has CR line endings")
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yamlv3.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yamlv3.MappingNode || doc.Content[0].Style&yamlv3.FlowStyle != 0 {
		return nil, errors.New("kind.yaml is not a block mapping")
	}
	top := doc.Content[0]
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
		lines[n-1] += "\n"
	}
	apiKey, apiVal := mapEntry(top, "apiVersion")
	if apiKey == nil || apiVal.Kind != yamlv3.ScalarNode {
		return nil, errors.New("kind.yaml has no apiVersion")
	}
	specKey, _ := mapEntry(top, "spec")
	var specText []string // the spec block's lines, key included, as it is
	if specKey != nil {
		if specKey.Column != 1 {
			return nil, errors.New("kind.yaml's spec is not at the start of its line")
		}
		start, end := blockLines(top, specKey, lines)
		specText = lines[start:end]
	}

	// The entries to add, at the indentation of versions' own.
	var entries [][]string
	copySpec := func(entry []string) []string {
		if specText == nil {
			return append(entry, "# spec: absent, as kind.yaml's: a free-form spec\n")
		}
		return append(entry, specText...)
	}
	if toHub {
		entries = append(entries,
			copySpec([]string{"name: " + hub + "\n", "served: true\n",
				"# " + hub + "'s schema, as it was when " + v + " became the hub: edit " + v + "'s (kind.yaml's\n",
				"# top-level spec) as " + v + " evolves, and convert between them in the\n",
				"# conversion templates.\n"}),
			[]string{"name: " + v + "\n", "storage: true # the hub (apiVersion): objects are stored at it\n"})
	} else {
		entries = append(entries, copySpec([]string{"name: " + v + "\n", "served: true\n",
			"# " + v + "'s schema, a copy of the hub's (" + hub + "): edit it as " + v + " differs,\n",
			"# and convert between them in the conversion templates.\n"}))
	}

	type splice struct {
		at   int // line index the text goes before
		text []string
	}
	var splices []splice
	versionsKey, versionsVal := mapEntry(top, "versions")
	switch {
	case versionsKey != nil && toHub:
		return nil, errors.New("kind.yaml lists versions already: a new hub would need each listed version's entry and conversions changed")
	case versionsKey == nil:
		// versions, made: the hub listed first, so that it stays the first
		// served version, which children's owner references name
		// (docs/versions.md, Children unchanged).
		block := []string{"\n", "# The kind's versions (operator create version). The hub is apiVersion's.\n", "versions:\n"}
		first := []string{"name: " + hub + "\n", "served: true\n"}
		if toHub {
			first = nil // the previous hub's entry is entries[0]
		}
		if first != nil {
			block = append(block, indentEntry(first, 2, 4)...)
		}
		for _, e := range entries {
			block = append(block, indentEntry(e, 2, 4)...)
		}
		splices = append(splices, splice{at: len(lines), text: block})
	case versionsVal.Kind != yamlv3.SequenceNode || versionsVal.Style&yamlv3.FlowStyle != 0 || len(versionsVal.Content) == 0:
		return nil, errors.New("kind.yaml's versions is not a block list")
	default:
		first := versionsVal.Content[0]
		line := lines[first.Line-1]
		dash := strings.LastIndex(line[:first.Column-1], "-")
		if dash < 0 || strings.TrimSpace(line[:dash]) != "" {
			return nil, errors.New("kind.yaml's versions: an entry does not start with '- '")
		}
		_, end := blockLines(top, versionsKey, lines)
		for _, e := range entries {
			splices = append(splices, splice{at: end, text: indentEntry(e, dash, first.Column-1)})
		}
	}
	if toHub {
		// apiVersion: group/v, the scalar replaced where it is.
		l := apiVal.Line - 1
		col := apiVal.Column - 1
		old := group + "/" + hub
		i := strings.Index(lines[l][col:], old)
		if i < 0 {
			return nil, fmt.Errorf("apiVersion %q is not written as %s", apiVal.Value, old)
		}
		lines[l] = lines[l][:col+i] + group + "/" + v + lines[l][col+i+len(old):]
	}
	out := slices.Clone(lines)
	for i := len(splices) - 1; i >= 0; i-- {
		out = slices.Insert(out, splices[i].at, splices[i].text...)
	}
	edited := []byte(strings.Join(out, ""))
	if err := checkEdit(src, edited, group, hub, v, toHub); err != nil {
		return nil, fmt.Errorf("editing kind.yaml: %w", err)
	}
	return edited, nil
}

// mapEntry is the key and value nodes of key in mapping m.
func mapEntry(m *yamlv3.Node, key string) (k, v *yamlv3.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// blockLines is the range of lines [start, end) of top-level key's entry
// in mapping top: from its line to the last line before the next key that
// is part of it (indented, or not a comment: a comment at the start of a
// line before the next key is that key's).
func blockLines(top, key *yamlv3.Node, lines []string) (start, end int) {
	start = key.Line - 1
	next := len(lines)
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i] == key && i+2 < len(top.Content) {
			next = top.Content[i+2].Line - 1
		}
	}
	end = start + 1
	for i := start + 1; i < next; i++ {
		t := strings.TrimRight(lines[i], "\n")
		if strings.TrimSpace(t) == "" || strings.HasPrefix(t, "#") {
			continue
		}
		end = i + 1
	}
	return start, end
}

// indentEntry writes a list entry's lines (at column 0, a key each or a
// block below one) as "- " at dash and the rest at key.
func indentEntry(entry []string, dash, key int) []string {
	out := make([]string, 0, len(entry))
	for i, l := range entry {
		switch {
		case i == 0:
			out = append(out, strings.Repeat(" ", dash)+"-"+strings.Repeat(" ", max(key-dash-1, 1))+l)
		case strings.TrimSpace(l) == "":
			out = append(out, "\n")
		default:
			out = append(out, strings.Repeat(" ", key)+l)
		}
	}
	return out
}

// checkEdit decodes kind.yaml before and after: every field but
// apiVersion and versions is as it was, apiVersion is the hub's, and
// versions is what was asked, so that no splice can have changed anything
// else.
func checkEdit(before, after []byte, group, hub, v string, toHub bool) error {
	var a, b map[string]any
	if err := yaml.Unmarshal(before, &a); err != nil {
		return err
	}
	if err := yaml.Unmarshal(after, &b); err != nil {
		return fmt.Errorf("the result does not decode: %w", err)
	}
	newHub := hub
	if toHub {
		newHub = v
	}
	if got, want := fmt.Sprint(b["apiVersion"]), (schema.GroupVersion{Group: group, Version: newHub}).String(); got != want {
		return fmt.Errorf("apiVersion is %s", got)
	}
	oldVersions, _ := a["versions"].([]any)
	newVersions, _ := b["versions"].([]any)
	for _, m := range []map[string]any{a, b} {
		delete(m, "apiVersion")
		delete(m, "versions")
	}
	if !reflect.DeepEqual(a, b) {
		return errors.New("fields other than apiVersion and versions changed")
	}
	if len(newVersions) < len(oldVersions)+1 || (len(oldVersions) > 0 && !reflect.DeepEqual(newVersions[:len(oldVersions)], oldVersions)) {
		return errors.New("the versions listed before changed")
	}
	names := []string{}
	for _, e := range newVersions {
		m, _ := e.(map[string]any)
		names = append(names, fmt.Sprint(m["name"]))
		if m["name"] != hub && m["name"] != v && len(oldVersions) == 0 {
			return fmt.Errorf("versions lists %v", m["name"])
		}
		if (m["name"] == v && !toHub) || (m["name"] == hub && toHub) {
			if !reflect.DeepEqual(m["spec"], a["spec"]) {
				return fmt.Errorf("version %v's spec is not a copy of the hub's", m["name"])
			}
		}
	}
	if !slices.Contains(names, v) || !slices.Contains(names, hub) && len(oldVersions) == 0 {
		return fmt.Errorf("versions lists %v", names)
	}
	return nil
}
