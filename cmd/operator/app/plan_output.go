package app

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tmplop/operator/engine/plan"
)

// ANSI colours of the text output, on a terminal only.
const (
	ansiRed    = "\033[31m"
	ansiGreen  = "\033[32m"
	ansiYellow = "\033[33m"
	ansiCyan   = "\033[36m"
	ansiBold   = "\033[1m"
	ansiReset  = "\033[0m"
)

// writePlan writes the plan for a person: per object with changes, a
// summary line, each child's action and its diff, the status' diff; then
// the total.
func writePlan(w io.Writer, r planReport, color bool) {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return code + s + ansiReset
	}
	for _, o := range r.Objects {
		c := o.Counts()
		id := o.Kind + "/" + o.Name
		if o.Namespace != "" {
			id = o.Kind + "/" + o.Namespace + "/" + o.Name
		}
		fmt.Fprintf(w, "%s: %d to change, %d to create, %d to prune", paint(ansiBold, id), c.Change, c.Create, c.Prune)
		if c.Held > 0 {
			fmt.Fprintf(w, ", %d held back", c.Held)
		}
		if c.Waiting > 0 {
			fmt.Fprintf(w, " (%d waiting)", c.Waiting)
		}
		if o.Status != nil {
			fmt.Fprint(w, ", status changes")
		}
		fmt.Fprintln(w)
		if o.Error != "" {
			fmt.Fprintf(w, "  %s %s\n", paint(ansiRed, "error:"), o.Error)
		}
		if o.Suspended != "" {
			fmt.Fprintf(w, "  suspended by %s: nothing is written until it resumes\n", o.Suspended)
		}
		if o.Finalizer != "" {
			fmt.Fprintln(w, paint(ansiYellow, "  + finalizer "+o.Finalizer))
		}
		if h := o.PruneHeld; h != nil {
			when := "since " + h.Since.UTC().Format(time.RFC3339)
			if h.Begins {
				when = "from this reconcile"
			}
			fmt.Fprintf(w, "  %s %s (%s, %s): %s\n", paint(ansiYellow, "prune held"), "by the deletion guard", h.Reason, when, h.Message)
		}
		for _, ch := range o.Children {
			sign, code := "~", ansiYellow
			switch ch.Action {
			case plan.Create:
				sign, code = "+", ansiGreen
			case plan.Prune:
				sign, code = "-", ansiRed
			case plan.Unchanged:
				sign, code = "=", ""
			}
			line := fmt.Sprintf("  %s %s", sign, ch.Label())
			if ch.Template != "" {
				line += " (" + ch.Template + ")"
			}
			var notes []string
			if ch.Local {
				notes = append(notes, "local diff: the dry-run was forbidden")
			}
			if ch.Hook != "" {
				notes = append(notes, "runs hook "+ch.Hook)
			}
			if ch.Waits != "" {
				notes = append(notes, ch.Waits)
			}
			if ch.Note != "" {
				notes = append(notes, ch.Note)
			}
			if len(notes) > 0 {
				line += " [" + strings.Join(notes, "; ") + "]"
			}
			if code != "" {
				line = paint(code, line)
			}
			fmt.Fprintln(w, line)
			if ch.Error != "" {
				fmt.Fprintf(w, "    %s %s\n", paint(ansiRed, "error:"), ch.Error)
			}
			writeDiff(w, ch.Diff, paint)
		}
		if o.Status != nil {
			fmt.Fprintf(w, "  %s %s\n", paint(ansiYellow, "~ status:"), strings.Join(o.Status.Paths, ", "))
			writeDiff(w, o.Status.Diff, paint)
		}
	}
	t := r.Total
	fmt.Fprintf(w, "Plan: %d objects, %d with changes: %d to change, %d to create, %d to prune, %d status changes, %d errors",
		t.Objects, t.Changed, t.Change, t.Create, t.Prune, t.Status, t.Errors)
	if t.Suspended > 0 {
		fmt.Fprintf(w, ", %d suspended", t.Suspended)
	}
	if t.Drifted > 0 {
		fmt.Fprintf(w, ", %d drifted (reported, left as they are)", t.Drifted)
	}
	if t.Held > 0 {
		fmt.Fprintf(w, ", %d prunes held back by the deletion guard", t.Held)
	}
	if t.Waiting > 0 {
		fmt.Fprintf(w, ", %d changes waiting for their dependencies", t.Waiting)
	}
	fmt.Fprintf(w, " (%.1fs)\n", t.Seconds)
}

// writeDiff writes a unified diff indented, coloured on a terminal.
func writeDiff(w io.Writer, diff string, paint func(code, s string) string) {
	for _, line := range strings.SplitAfter(diff, "\n") {
		if line == "" {
			continue
		}
		text := "    " + strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			text = paint(ansiBold, text)
		case strings.HasPrefix(line, "@@"):
			text = paint(ansiCyan, text)
		case strings.HasPrefix(line, "+"):
			text = paint(ansiGreen, text)
		case strings.HasPrefix(line, "-"):
			text = paint(ansiRed, text)
		}
		fmt.Fprintln(w, text)
	}
}
