package requeue

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

type own struct{}

func (own) Error() string     { return "own" }
func (own) RequeueMark() Mark { return Mark{Cause: CauseOwnership, Terminal: true, After: time.Minute} }

func TestOf(t *testing.T) {
	base := errors.New("base")
	cases := []struct {
		name string
		err  error
		want Mark
		ok   bool
	}{
		{name: "unmarked", err: base},
		{name: "marked", err: With(base, Mark{Cause: CauseLookup}), want: Mark{Cause: CauseLookup}, ok: true},
		{name: "wrapped mark", err: fmt.Errorf("step: %w", With(base, Mark{Terminal: true})), want: Mark{Terminal: true}, ok: true},
		{name: "a type's own mark", err: fmt.Errorf("x: %w", own{}), want: Mark{Cause: CauseOwnership, Terminal: true, After: time.Minute}, ok: true},
		{name: "the outer mark wins", err: With(fmt.Errorf("x: %w", own{}), Mark{Cause: CauseRender}), want: Mark{Cause: CauseRender}, ok: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Of(tc.err)
			if ok != tc.ok || got != tc.want {
				t.Fatalf("Of = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
			if tc.ok && !errors.Is(tc.err, base) && tc.name != "a type's own mark" && tc.name != "the outer mark wins" {
				t.Errorf("the mark hides the error it wraps")
			}
		})
	}
	if With(nil, Mark{}) != nil {
		t.Errorf("With(nil) is not nil")
	}
}
