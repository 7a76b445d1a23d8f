package health

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Limits of one readyWhen evaluation. An expression is the folder author's,
// like a template, but it runs on every change of every child of its kind:
// it must stay small and fast.
const (
	maxOutput = 1024
	timeout   = time.Second
	// maxRunaway is how many evaluations past their deadline may still
	// run before new ones are refused: a loop in an expression may hold a
	// CPU, not every CPU.
	maxRunaway = 2
)

// funcs are sprig's functions without the operator's environment, as the
// templates have them.
var funcs = sync.OnceValue(func() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["getHostByName"] = func(string) string { return "" }
	return f
})

// Parse checks a readyWhen expression: a Go template over the child.
func Parse(expression string) error {
	_, err := parse(expression)
	return err
}

type rule struct {
	tmpl    *template.Template
	runaway atomic.Int32
}

func parse(expression string) (*rule, error) {
	if strings.TrimSpace(expression) == "" {
		return nil, errors.New("expression is empty")
	}
	t, err := template.New("readyWhen").Funcs(funcs()).Parse(expression)
	if err != nil {
		return nil, err
	}
	return &rule{tmpl: t}, nil
}

// eval renders the expression over a copy of obj: true is Current, any
// other output InProgress (with the output as the message), an error
// Unknown.
func (r *rule) eval(obj *unstructured.Unstructured) Result {
	if n := r.runaway.Load(); n >= maxRunaway {
		return Result{Status: Unknown, Reason: "ReadyWhenFailed",
			Message: fmt.Sprintf("readyWhen: %d earlier evaluations are still running past their deadline", n)}
	}
	type outcome struct {
		out string
		err error
	}
	const (
		running = iota
		finished
		abandoned
	)
	var state atomic.Int32
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				o = outcome{err: fmt.Errorf("panic: %v", p)}
			}
			if state.CompareAndSwap(running, finished) {
				done <- o
				return
			}
			r.runaway.Add(-1)
		}()
		// sprig's set and unset modify maps: the child stays as it is.
		data := runtime.DeepCopyJSON(obj.Object)
		w := &capped{}
		if err := r.tmpl.Execute(w, data); err != nil {
			o.err = err
			return
		}
		o.out = w.buf.String()
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var o outcome
	select {
	case o = <-done:
	case <-timer.C:
		r.runaway.Add(1)
		if state.CompareAndSwap(running, abandoned) {
			return Result{Status: Unknown, Reason: "ReadyWhenFailed", Message: fmt.Sprintf("readyWhen: did not finish within %s", timeout)}
		}
		r.runaway.Add(-1) // it finished meanwhile
		o = <-done
	}
	if o.err != nil {
		return Result{Status: Unknown, Reason: "ReadyWhenFailed", Message: "readyWhen: " + o.err.Error()}
	}
	out := strings.TrimSpace(strings.ReplaceAll(o.out, "<no value>", ""))
	if out == "true" {
		return Result{Status: Current, Message: "readyWhen is true"}
	}
	if out == "" {
		out = "readyWhen printed nothing"
	}
	return Result{Status: InProgress, Reason: "ReadyWhenNotTrue", Message: out}
}

// capped is a writer that fails past maxOutput bytes.
type capped struct{ buf bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > maxOutput {
		return 0, fmt.Errorf("output over %d bytes", maxOutput)
	}
	return c.buf.Write(p)
}
