package chart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/tmplop/operator/engine/render"
)

// SchemaFile is a chart's values schema (loader.LoadFiles reads it into
// Chart.Schema).
const SchemaFile = "values.schema.json"

// schemaURL is where Helm compiles a values schema
// (chartutil.ValidateAgainstSingleSchema): the same URL keeps the
// validation messages Helm's, word for word.
const schemaURL = "file:///values.schema.json"

// valuesSchema is one chart's values.schema.json, compiled at load with
// no loader: Helm's compiler fetches what a $ref or $schema names over
// http and https and reads it from files, at every render, from the
// operator's own network position, and its errors and enum or const
// messages tell what it found there. Here the schema is its own document
// only (its #/... references, its embedded $id resources, the JSON
// Schema drafts' metaschemas, which the library holds), and a folder whose
// schema names anything else is refused at load (schemaRefError).
//
// Validating is held to the render's budget (work): every schema
// evaluated is one step, charged and checked against the deadline, so
// that a schema whose applicators nest exponentially stops at the budget.
// The step is a vocabulary of our own that every schema object holds
// (budgetVocabulary), which a compiled schema reaches through its
// holder: one validation at a time per compiled copy, taken from free,
// as the render's template instances are (a copy compiled again when
// renders of the folder validate at once).
type valuesSchema struct {
	file string // in the chart's folder: values.schema.json, charts/db/values.schema.json
	data []byte
	free chan *compiledSchema
}

// freeSchemas is how many idle compiled copies a schema keeps: about the
// number of renders of one folder that run at once.
const freeSchemas = 16

// compiledSchema is one compiled copy of a schema, with the validation
// that has it checked out.
type compiledSchema struct {
	schema *jsonschema.Schema
	h      *stepHolder
}

// stepHolder is what the steps of one compiled copy read: the validation
// that has it.
type stepHolder struct{ v *validation }

// compileSchema compiles a chart's values.schema.json (file: its path in
// the chart folder), or refuses it with a *render.Error at its file and,
// for a reference out of the document, its line.
func compileSchema(file string, data []byte) (*valuesSchema, error) {
	s := &valuesSchema{file: file, data: data, free: make(chan *compiledSchema, freeSchemas)}
	c, err := s.compile()
	if err != nil {
		return nil, err
	}
	s.free <- c
	return s, nil
}

func (s *valuesSchema) compile() (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.data))
	if err != nil {
		return nil, &render.Error{Template: s.file, Line: jsonErrorLine(s.data, err), Message: "not JSON: " + err.Error()}
	}
	h := &stepHolder{}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(boundedRegexp)
	c.RegisterVocabulary(budgetVocabulary(h))
	// The budget's vocabulary applies to every draft's schemas, not only
	// to those whose metaschema lists it.
	c.AssertVocabs()
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, &render.Error{Template: s.file, Message: err.Error()}
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, s.compileError(err)
	}
	return &compiledSchema{schema: sch, h: h}, nil
}

// compileError is err of compiling the schema, at the line of the
// reference that named what no loader loads.
func (s *valuesSchema) compileError(err error) error {
	var load *jsonschema.LoadURLError
	if !errors.As(err, &load) {
		return &render.Error{Template: s.file, Message: err.Error()}
	}
	key, line := refLine(s.data, load.URL)
	if key == "" {
		key = "a reference"
	}
	return &render.Error{Template: s.file, Line: line, Message: fmt.Sprintf(
		"%s names %s, outside the schema: a values schema is read from its own document only, never fetched from the network or read from a file; put what it names under $defs (or definitions) and refer to it with #/$defs/...", key, load.URL)}
}

// noLoader loads nothing: every URL the schema names beside its own
// document is refused, but Helm's `urn:` references, which Helm itself
// resolves to a schema that accepts anything when nothing resolves them
// (chartutil's URNResolver, unset by default), so that a chart Helm
// installs loads here too.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	if strings.HasPrefix(u, "urn:") {
		return true, nil
	}
	return nil, errors.New("not loaded: a values schema is its own document only")
}

// maxRegexp bounds the regular expressions the schema compiles: its
// patterns, and the values the "regex" format checks (asserted by the
// drafts before 2019-09) by compiling them. A value is the tenant's, and
// compiling a long one allocates many times its size; real patterns are
// far shorter.
const maxRegexp = 64 << 10

func boundedRegexp(s string) (jsonschema.Regexp, error) {
	if len(s) > maxRegexp {
		return nil, fmt.Errorf("a regular expression of %d bytes, more than the %d compiled", len(s), maxRegexp)
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	return re, nil
}

// budgetVocabulary makes every schema object of a compiled schema a
// step of the validation that h holds: the library calls the extension's
// Validate each time it evaluates one, after its own keywords, and what
// the step panics with (stopValidation) unwinds the validation at once.
func budgetVocabulary(h *stepHolder) *jsonschema.Vocabulary {
	return &jsonschema.Vocabulary{
		URL: "urn:tmplop:budget",
		Compile: func(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
			return &budgetStep{h: h, weight: 1 + inPlace(obj)}, nil
		},
	}
}

// inPlace counts the subschemas of a schema object that apply to the
// same value as the object itself (allOf, anyOf, oneOf, not, if, then,
// else, references): a subschema that fails at once (a type, an enum)
// returns before its own step, so its parent's step pays for it.
func inPlace(obj map[string]any) int64 {
	var n int64
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		if l, ok := obj[k].([]any); ok {
			n += int64(len(l))
		}
	}
	for _, k := range []string{"not", "if", "then", "else", "$ref", "$dynamicRef", "$recursiveRef"} {
		if _, ok := obj[k]; ok {
			n++
		}
	}
	if m, ok := obj["dependentSchemas"].(map[string]any); ok {
		n += int64(len(m))
	}
	return n
}

// budgetStep is one schema object's step.
type budgetStep struct {
	h      *stepHolder
	weight int64 // 1 + its in-place subschemas
}

func (b *budgetStep) Validate(_ *jsonschema.ValidatorContext, v any) {
	if run := b.h.v; run != nil {
		run.step(b.weight, v)
	}
}

// What the budget charges a step: what the library allocates for one
// schema evaluated (a validator, and an error when it fails), for each of
// the subschemas that evaluated the same value, and for each element of
// the value it walked (an element that failed at once costs its error).
// Measured: about 500 bytes a schema that passes, 1,500 one whose three
// branches fail, 420 an element that fails its type (TestSchemaStepCost).
const (
	stepCost = 512
	elemCost = 512
)

// validation is one validation's budget, over the work of its render.
type validation struct {
	w     *work
	file  string
	steps int64
}

// stopValidation is what a step panics with when the budget stops the
// validation; validate recovers it.
type stopValidation struct{ err error }

func (v *validation) step(weight int64, value any) {
	v.steps++
	n := stepCost * weight
	switch t := value.(type) {
	case map[string]any:
		n += elemCost * int64(len(t))
	case []any:
		n += elemCost * int64(len(t))
	}
	if err := v.w.charge(v.file, n, func() string {
		return fmt.Sprintf("%d steps of validating the values against %s", v.steps, v.file)
	}); err != nil {
		panic(stopValidation{err})
	}
	if v.steps%64 == 0 {
		if err := v.w.check(v.file); err != nil {
			panic(stopValidation{err})
		}
	}
}

// validate checks values against the schema within w: nil, the
// validation's error (a *jsonschema.ValidationError), or the budget's
// (a *render.Error).
func (s *valuesSchema) validate(values map[string]any, w *work) (err error) {
	var c *compiledSchema
	select {
	case c = <-s.free:
	default:
		if c, err = s.compile(); err != nil {
			return err
		}
	}
	c.h.v = &validation{w: w, file: s.file}
	defer func() {
		if p := recover(); p != nil {
			if stop, ok := p.(stopValidation); ok {
				err = stop.err
			} else {
				// As Helm: a schema the library cannot validate with
				// must not crash the operator.
				err = fmt.Errorf("unable to validate schema: %v", p)
			}
		}
		c.h.v = nil
		select {
		case s.free <- c:
		default:
		}
	}()
	return c.schema.Validate(values)
}

// Bounds of a validation error's message: the library lists every
// failure, and a long value repeated in each could make it as large as
// the values times the failures.
const (
	maxErrorLines    = 50
	maxErrorLineSize = 512
)

var printer = message.NewPrinter(language.English)

// validationMessage is err as Helm prints it (JSONSchemaValidationError:
// the library's message without its first line), bounded.
func validationMessage(err error) string {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err.Error() + "\n"
	}
	var sb strings.Builder
	lines := 0
	var display func(e *jsonschema.ValidationError, indent int)
	display = func(e *jsonschema.ValidationError, indent int) {
		if lines > maxErrorLines {
			return
		}
		// The library's display (output.go), without the verbose form.
		_, isRef := e.ErrorKind.(*kind.Reference)
		if !(len(e.Causes) == 1 && isRef) {
			line := ""
			if _, ok := e.ErrorKind.(*kind.Schema); !ok {
				line = "at " + quote(jsonPointer(e.InstanceLocation)) + ": " + e.ErrorKind.LocalizedString(printer)
			}
			if indent > 0 {
				lines++
				if lines > maxErrorLines {
					sb.WriteString("\n- ... (more errors)")
					return
				}
				sb.WriteString("\n" + strings.Repeat("  ", indent-1) + "- ")
				if len(line) > maxErrorLineSize {
					line = line[:maxErrorLineSize] + "..."
				}
				sb.WriteString(line)
			}
			indent++
		}
		for _, cause := range e.Causes {
			display(cause, indent)
		}
	}
	display(verr, 0)
	return strings.TrimPrefix(sb.String(), "\n") + "\n"
}

func jsonPointer(tokens []string) string {
	var sb strings.Builder
	for _, tok := range tokens {
		sb.WriteByte('/')
		sb.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return sb.String()
}

// quote is the library's: single quotes around a Go-quoted string.
func quote(s string) string {
	s = fmt.Sprintf("%q", s)
	s = strings.ReplaceAll(s, `\"`, `"`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s[1:len(s)-1] + "'"
}

// refLine finds the keyword of data that named u ($ref, $schema,
// $dynamicRef or $recursiveRef) and its line: the one whose value,
// resolved against the schema's URL, is u; failing that, one whose
// value u ends with. "" and 0 when none is found.
func refLine(data []byte, u string) (string, int) {
	base, _ := url.Parse(schemaURL)
	target, _, _ := strings.Cut(u, "#")
	type ref struct {
		key, value string
		offset     int64
	}
	var refs []ref
	dec := json.NewDecoder(bytes.NewReader(data))
	var key string
	expectKey := false
	var stack []bool // true: an object
	for {
		offset := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, true)
				expectKey = true
			case '[':
				stack = append(stack, false)
				expectKey = false
			default:
				stack = stack[:len(stack)-1]
				expectKey = len(stack) > 0 && stack[len(stack)-1]
			}
			continue
		case string:
			if expectKey {
				key = t
				expectKey = false
				continue
			}
			switch key {
			case "$ref", "$schema", "$dynamicRef", "$recursiveRef":
				refs = append(refs, ref{key: key, value: t, offset: offset})
			}
		}
		key = ""
		expectKey = len(stack) > 0 && stack[len(stack)-1]
	}
	pick := func(match func(r ref) bool) (string, int) {
		for _, r := range refs {
			if match(r) {
				return r.key, 1 + bytes.Count(data[:r.offset], []byte("\n"))
			}
		}
		return "", 0
	}
	if k, l := pick(func(r ref) bool {
		v, err := url.Parse(r.value)
		if err != nil {
			return false
		}
		resolved, _, _ := strings.Cut(base.ResolveReference(v).String(), "#")
		return resolved == target
	}); k != "" {
		return k, l
	}
	return pick(func(r ref) bool {
		v, _, _ := strings.Cut(r.value, "#")
		return v != "" && strings.HasSuffix(target, strings.TrimPrefix(v, "./"))
	})
}

// jsonErrorLine is the line of a JSON syntax error in data, or 0.
func jsonErrorLine(data []byte, err error) int {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) && syntax.Offset <= int64(len(data)) {
		return 1 + bytes.Count(data[:syntax.Offset], []byte("\n"))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return 1 + bytes.Count(data, []byte("\n"))
	}
	return 0
}
