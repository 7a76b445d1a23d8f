package budget

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func newMeter(output int64) *Meter {
	m := &Meter{}
	m.Init(Limits{Timeout: time.Second, Output: output, Calls: 3})
	return m
}

// TestBounded: a call is refused before it runs when its estimate does not
// fit, is charged what it returned (or its estimate), and is not charged
// when it fails.
func TestBounded(t *testing.T) {
	called := false
	call := func() (string, error) { called = true; return "abcd", nil }
	strLen := func(s string) int64 { return int64(len(s)) }
	cases := []struct {
		name      string
		produced  int64 // charged before the call
		estimate  int64
		cost      func(string) int64
		err       error // returned by the call
		wantErr   string
		wantCall  bool
		remaining int64
	}{
		{name: "fits, charged its result", estimate: 8, cost: strLen, wantCall: true, remaining: 6},
		{name: "fits, charged its estimate", estimate: 8, wantCall: true, remaining: 2},
		{name: "refused before the call", produced: 4, estimate: 7, wantErr: "output (10 bytes): eight", remaining: 6},
		{name: "a negative estimate is refused", estimate: -1, wantErr: "output (10 bytes)", remaining: 10},
		{name: "the result does not fit", produced: 8, estimate: 0, cost: strLen, wantCall: true, wantErr: "output (10 bytes)", remaining: 2},
		{name: "a failed call is not charged", estimate: 8, err: errors.New("boom"), wantCall: true, wantErr: "boom", remaining: 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newMeter(10)
			if err := m.Charge(tc.produced, nil); err != nil {
				t.Fatal(err)
			}
			called = false
			c := call
			if tc.err != nil {
				c = func() (string, error) { called = true; return "", tc.err }
			}
			out, err := Bounded(m, tc.estimate, func() string { return "eight" }, c, tc.cost)
			if called != tc.wantCall {
				t.Errorf("called = %v, want %v", called, tc.wantCall)
			}
			if tc.wantErr == "" && (err != nil || out != "abcd") {
				t.Errorf("Bounded = %q, %v", out, err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || out != "") {
				t.Errorf("Bounded = %q, %v; want the error %q", out, err, tc.wantErr)
			}
			if got := m.Remaining(); got != tc.remaining {
				t.Errorf("Remaining = %d, want %d", got, tc.remaining)
			}
		})
	}
}

// TestStop: the first stop wins, and every check after it fails with it.
func TestStop(t *testing.T) {
	m := newMeter(10)
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	m.Cancel()
	m.Expire()
	for _, err := range []error{m.Check(), m.Charge(1, nil), m.Enter("x")} {
		if be, ok := errors.AsType[*Error](err); !ok || be.Budget != Canceled || be.RequeueMark().Terminal {
			t.Errorf("err = %v, want the canceled error", err)
		}
	}
	m = newMeter(10)
	m.Expire()
	if be, ok := errors.AsType[*Error](m.Check()); !ok || be.Budget != Time || be.Limit != int64(time.Second) {
		t.Errorf("err = %v, want the time error", be)
	}
}

// TestEnter: calls are counted in all, depth only while nested.
func TestEnter(t *testing.T) {
	m := newMeter(10)
	for range 3 {
		if err := m.Enter("a"); err != nil {
			t.Fatal(err)
		}
		m.Leave()
	}
	if be, ok := errors.AsType[*Error](m.Enter("b")); !ok || be.Budget != Calls || be.Detail != "b" || !be.RequeueMark().Terminal {
		t.Errorf("err = %v, want the calls error", be)
	}
	m.Init(Limits{Calls: 2 * MaxDepth})
	for range MaxDepth {
		if err := m.Enter("r"); err != nil {
			t.Fatal(err)
		}
	}
	if be, ok := errors.AsType[*Error](m.Enter("r")); !ok || be.Budget != Depth || m.Depth() != MaxDepth {
		t.Errorf("err = %v at depth %d, want the depth error at %d", be, m.Depth(), MaxDepth)
	}
}

// TestMeasure: a value is measured within what is left, and one that
// holds itself is refused without being walked for ever.
func TestMeasure(t *testing.T) {
	m := newMeter(1 << 10)
	s, err := m.Measure("print", map[string]any{"a": []any{"xy", int64(1)}}, 0)
	if err != nil || s.Entries != 1 || s.Elems != 2 || s.Strs != 3 || s.Leaves != 3 || s.Nodes != 2 {
		t.Errorf("Measure = %+v, %v", s, err)
	}
	self := map[string]any{}
	self["self"] = self
	if err := m.Walk("print", self); err == nil || !strings.Contains(err.Error(), "print of a value of more than") {
		t.Errorf("Walk of a map holding itself = %v, want an output error", err)
	}
	if n, ok := Size(strings.Repeat("x", 100), 50); ok || n <= 50 {
		t.Errorf("Size past its limit = %d, %v", n, ok)
	}
}

// TestWriter: what is written is charged, and a write that does not fit
// is refused whole.
func TestWriter(t *testing.T) {
	m := newMeter(8)
	w := NewWriter(m, "a.yaml")
	if _, err := w.Write([]byte("abcde")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("fghi")); err == nil || !strings.Contains(err.Error(), "output (8 bytes): a.yaml") {
		t.Errorf("Write past the budget = %v", err)
	}
	if w.String() != "abcde" {
		t.Errorf("written %q", w.String())
	}
	w.Reset(m, "b.yaml")
	if len(w.Bytes()) != 0 || m.Remaining() != 3 {
		t.Errorf("after Reset: %q, %d left", w.Bytes(), m.Remaining())
	}
}

func TestSaturating(t *testing.T) {
	if MulSat(1<<40, 1<<40) != 1<<62 || MulSat(3, 4) != 12 || AddSat(1<<62, 1<<62) != 1<<62 || AddSat(2, 3) != 5 {
		t.Error("saturating arithmetic")
	}
}
