package budget

// Writer is where a render writes; it charges the meter, so that the
// output budget also stops templates that print in a loop, and checks the
// deadline on every write.
type Writer struct {
	m    *Meter
	buf  []byte
	what string // file or helper being written, for the error
}

// NewWriter is a Writer charging m, naming what in its errors.
func NewWriter(m *Meter, what string) *Writer { return &Writer{m: m, what: what} }

// Reset empties w to write what, charged to m; its buffer is reused.
func (w *Writer) Reset(m *Meter, what string) { w.m, w.buf, w.what = m, w.buf[:0], what }

func (w *Writer) Write(p []byte) (int, error) {
	if err := w.m.Charge(int64(len(p)), func() string { return w.what }); err != nil {
		return 0, err
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// Bytes is what was written since the last Reset, valid until the next.
func (w *Writer) Bytes() []byte { return w.buf }

// String is what was written, copied.
func (w *Writer) String() string { return string(w.buf) }
