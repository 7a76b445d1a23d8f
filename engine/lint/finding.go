package lint

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
)

// Severity is how bad a finding is.
type Severity string

// The severities, worst first. Only errors make `operator lint` fail
// (unless --fail-on says otherwise).
const (
	Error   Severity = "error"
	Warning Severity = "warning"
	Info    Severity = "info"
)

// rank orders severities: error 3, warning 2, info 1, anything else 0.
func (s Severity) rank() int {
	switch s {
	case Error:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// ParseSeverity reads a severity name.
func ParseSeverity(s string) (Severity, error) {
	switch sev := Severity(s); sev {
	case Error, Warning, Info:
		return sev, nil
	}
	return "", fmt.Errorf("severity %q: want error, warning or info", s)
}

// AtLeast reports whether s is as bad as min or worse.
func (s Severity) AtLeast(min Severity) bool { return s.rank() >= min.rank() }

// Finding is one thing lint found.
type Finding struct {
	// File is the path of the file it is about, as the options named its
	// directory (templates/memcached/deployment.yaml), with forward slashes.
	File string `json:"file"`
	// Line is 1-based; 0 when not known.
	Line     int      `json:"line,omitempty"`
	Severity Severity `json:"severity"`
	// Code is stable: LNTnnn (see Codes and docs/lint.md).
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Where is file:line, or file when the line is not known.
func (f Finding) Where() string {
	if f.Line > 0 {
		return f.File + ":" + strconv.Itoa(f.Line)
	}
	return f.File
}

// String is the finding as one line of text output.
func (f Finding) String() string {
	return fmt.Sprintf("%s: %s %s %s", f.Where(), f.Severity, f.Code, f.Message)
}

// Sort orders findings by file, line, code and message, and drops exact
// duplicates (the same template failing the same way for two reasons).
func Sort(fs []Finding) []Finding {
	slices.SortFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Code, b.Code), cmp.Compare(a.Message, b.Message),
			cmp.Compare(b.Severity.rank(), a.Severity.rank()))
	})
	return slices.CompactFunc(fs, func(a, b Finding) bool {
		return a.File == b.File && a.Line == b.Line && a.Code == b.Code && a.Message == b.Message
	})
}

// Count returns how many findings have severity sev or worse.
func Count(fs []Finding, sev Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity.AtLeast(sev) {
			n++
		}
	}
	return n
}

// WriteText writes one finding per line.
func WriteText(w io.Writer, fs []Finding) error {
	for _, f := range fs {
		if _, err := fmt.Fprintln(w, f.String()); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the findings as a JSON array ([] for none).
func WriteJSON(w io.Writer, fs []Finding) error {
	if fs == nil {
		fs = []Finding{}
	}
	data, err := json.MarshalIndent(fs, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// path joins elements into a finding's File: forward slashes, clean.
func path(elem ...string) string { return filepath.ToSlash(filepath.Join(elem...)) }
