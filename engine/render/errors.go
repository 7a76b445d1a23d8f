package render

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/tmplop/operator/engine/requeue"
)

// Error is a mistake of a folder's author, located in a file: a template
// that fails, and every other file of the folder that does not load
// (kind.yaml, crd.yaml, a chart's values.yaml).
//
// Every error returned by Parse, Set.Children and Set.Status is an
// *Error (possibly wrapped), and so is every error of catalog.Compile about
// one of the folder's files, and of engine/crd about kind.yaml or
// crd.yaml: callers read the file and line with errors.As (lint's
// findings, the Events on a folder's ConfigMap, the object's conditions),
// never from the message. It is made where the mistake is found (At, and
// YAMLError for a YAML file that does not decode). Template is empty only
// for errors about the Input itself, which no file caused.
type Error struct {
	Template string // the file, e.g. "deployment.yaml", "kind.yaml"
	Line     int    // 1-based; 0 when unknown
	// Code is what kind of mistake it is, as `operator lint` reports it
	// (docs/lint.md): one of the codes below when the place that found it
	// knows; "" for a render's failure, which lint codes by what it
	// rendered.
	Code    string
	Message string // e.g. `spec.size is required`, without the text/template noise

	// err is the original error, kept so that errors.Is can still see what a
	// Lookup returned (context.Canceled, a NotFound from the cache...).
	err error
}

// The codes of the mistakes found where a folder is loaded, which
// engine/lint reports as they are (lint's codes.go lists every code).
const (
	CodeKindYAML = "LNT001" // kind.yaml does not load
	CodeParse    = "LNT002" // a template does not parse
	CodeFolder   = "LNT003" // the folder does not load for another reason
	CodeInput    = "LNT010" // a CRD or an input file cannot be read
)

// At is err as the mistake of file at line (0: unknown), of kind code.
// Its message is err's; errors.Is and As see err.
func At(file string, line int, code string, err error) *Error {
	return &Error{Template: file, Line: line, Code: code, Message: err.Error(), err: err}
}

func (e *Error) Error() string {
	switch {
	case e.Template == "":
		return e.Message
	case e.Line > 0:
		return e.Template + ":" + strconv.Itoa(e.Line) + ": " + e.Message
	default:
		return e.Template + ": " + e.Message
	}
}

// BudgetExceeded is the error of work done for a render outside it (a
// chart's values: engine/chart) that the render's budget stopped, located
// in file as the render's own budget errors are, so that it is reported
// and retried as they are (RequeueMark).
func BudgetExceeded(file string, be *BudgetError) *Error {
	return &Error{Template: file, Message: be.Error(), err: be}
}

// Unwrap returns the error the message was taken from.
func (e *Error) Unwrap() error { return e.err }

// RequeueMark says what retrying a failed render can do: what its cause
// says (a budget, a lookup), else terminal: a template error fails the same
// way until the object or the folder changes.
func (e *Error) RequeueMark() requeue.Mark {
	if m, ok := requeue.Of(e.err); ok {
		return m
	}
	return requeue.Mark{Cause: requeue.CauseRender, Terminal: true}
}

// funcError is what our template functions return. text/template wraps it in
// "template: file:line:col: executing ... error calling fn: ..."; finding it
// in the chain lets execError report the author's message (required, fail)
// or the Lookup's error alone, as Helm does with its HELM_ERR markers, but
// without parsing strings.
type funcError struct {
	msg   string
	cause error
	// sticky errors are passed up unchanged by include and tpl instead of
	// being nested once more: a recursion limit hit 1000 calls deep would
	// otherwise build 1000 error strings, each containing all the inner ones.
	sticky bool
}

func (e *funcError) Error() string { return e.msg }
func (e *funcError) Unwrap() error { return e.cause }

func funcErrorf(format string, args ...any) *funcError {
	return &funcError{msg: fmt.Sprintf(format, args...)}
}

// location matches the prefix text/template puts on parse and execution
// errors: "template: NAME:LINE: " (parse) or "template: NAME:LINE:COL: " (exec).
var location = regexp.MustCompile(`^template: (.+?):(\d+)(?::\d+)?: `)

// executing matches the `executing "name" ` that follows an execution error's
// location; the template name is noise once the file is known.
var executing = regexp.MustCompile(`^executing "(?:[^"\\]|\\.)*" `)

// splitLocation splits a text/template error message into the template name,
// the line (0 when absent) and the rest of the message.
func splitLocation(msg string) (name string, line int, rest string, ok bool) {
	if m := location.FindStringSubmatchIndex(msg); m != nil {
		line, _ = strconv.Atoi(msg[m[4]:m[5]])
		return msg[m[2]:m[3]], line, msg[m[1]:], true
	}
	// Errors raised before execution reached a node have no line:
	// "template: NAME: message".
	if after, found := strings.CutPrefix(msg, "template: "); found {
		if name, rest, found := strings.Cut(after, ": "); found {
			return name, 0, rest, true
		}
	}
	return "", 0, msg, false
}

// parseError turns a text/template parse error into an *Error for file.
func parseError(file string, err error) *Error {
	e := &Error{Template: file, Code: CodeParse, Message: err.Error(), err: err}
	if name, line, rest, ok := splitLocation(err.Error()); ok && name == file {
		e.Line, e.Message = line, rest
	}
	return e
}

// execError turns an execution error of file into an *Error.
//
// text/template nests errors: a failure inside an included helper reads
// `template: deployment.yaml:3:4: executing ... error calling include:
// template: _helpers.tpl:2:5: executing ... at <.Spec.a.b>: nil pointer ...`.
// The innermost location that is one of the folder's files is where the
// failing action is, and the innermost message is the one that explains it.
// Locations inside tpl strings are not files: the tpl call site is reported.
func (s *Set) execError(file string, err error) *Error {
	e := &Error{Template: file, Message: err.Error(), err: err}
	for cur := err; cur != nil; cur = errors.Unwrap(cur) {
		switch x := cur.(type) {
		case template.ExecError:
			name, line, rest, ok := splitLocation(x.Err.Error())
			if !ok {
				e.Message = x.Err.Error()
				continue
			}
			if _, isFile := s.files[name]; isFile {
				e.Template, e.Line = name, line
			}
			e.Message = executing.ReplaceAllLiteralString(rest, "")
		case *funcError:
			e.Message = x.msg
			return e
		case *BudgetError:
			// A write refused by the budget: text/template returns it bare.
			e.Message = x.Error()
			return e
		}
	}
	return e
}
