package cached

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/framer"
)

// lineFramer frames a JSON watch stream by lines. kube-apiserver writes
// each watch event as one compact JSON object and a newline (a
// json.Encoder's output), so a frame ends at the next newline and finding
// it is a byte search; the JSON framer of apimachinery runs a JSON scanner
// over every byte of every event to find the same boundary, and the
// decoder then scans it again. A stream that is not one object a line
// (pretty-printed, as no server we know writes a watch) is framed by the
// JSON framer from its first such line on.
type lineFramer struct{}

func (lineFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	return &lineFrameReader{br: bufio.NewReaderSize(r, 32<<10), body: r}
}

func (lineFramer) NewFrameWriter(w io.Writer) io.Writer {
	return jsonserializer.Framer.NewFrameWriter(w)
}

// lineFrameReader is io.Reader as the streaming decoder reads frames: each
// Read returns one frame, or as much of it as fits with io.ErrShortBuffer
// and the rest at the next Reads.
type lineFrameReader struct {
	br        *bufio.Reader
	body      io.Closer
	remaining []byte
	// long holds a line longer than br's buffer, and is reused from one
	// such line to the next: grown anew for each, a line of 1 MB left 5 MB
	// of garbage. It keeps the longest line's size, as the streaming
	// decoder's buffer does.
	long []byte
	// json frames the rest of the stream once a line was not a frame.
	json io.ReadCloser
}

func (l *lineFrameReader) Read(p []byte) (int, error) {
	if len(l.remaining) > 0 {
		n := copy(p, l.remaining)
		l.remaining = l.remaining[n:]
		if len(l.remaining) > 0 {
			return n, io.ErrShortBuffer
		}
		l.remaining = nil
		return n, nil
	}
	if l.json != nil {
		return l.json.Read(p)
	}
	for {
		line, err := l.readLine()
		frame := bytes.TrimSpace(line)
		if len(frame) == 0 {
			if err != nil {
				return 0, err
			}
			continue // a keep-alive newline, or the end of the stream
		}
		if frame[0] != '{' || frame[len(frame)-1] != '}' {
			// Not a compact object on a line of its own: hand this
			// line and the rest of the stream to the JSON framer.
			rest := io.MultiReader(bytes.NewReader(bytes.Clone(line)), l.br)
			l.json = framer.NewJSONFramedReader(readCloser{rest, l.body})
			return l.json.Read(p)
		}
		n := copy(p, frame)
		if n < len(frame) {
			l.remaining = bytes.Clone(frame[n:])
			return n, io.ErrShortBuffer
		}
		return n, nil
	}
}

// readLine is the next line with its newline, valid until the next read;
// at the end of the stream, what is left and io.EOF.
func (l *lineFrameReader) readLine() ([]byte, error) {
	line, err := l.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	long := append(l.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = l.br.ReadSlice('\n')
		long = append(long, line...)
	}
	l.long = long
	return long, err
}

func (l *lineFrameReader) Close() error { return l.body.Close() }

type readCloser struct {
	io.Reader
	io.Closer
}

// decodeEvent reads a watch event's envelope as kube-apiserver writes it,
// {"type":"…","object":{…}}, by its bytes: the object is not scanned here,
// only once, by the object decoder. Anything else is left to the JSON
// decoder (ok false).
func decodeEvent(data []byte, into *metav1.WatchEvent) (ok bool) {
	const prefix, sep = `{"type":"`, `","object":`
	data = bytes.TrimSpace(data)
	rest, found := bytes.CutPrefix(data, []byte(prefix))
	if !found {
		return false
	}
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return false
	}
	typ := rest[:end]
	obj, found := bytes.CutPrefix(rest[end:], []byte(sep))
	if !found || len(obj) < 3 || obj[0] != '{' || obj[len(obj)-1] != '}' {
		return false
	}
	obj = bytes.TrimSpace(obj[:len(obj)-1]) // the envelope's closing brace
	if len(obj) == 0 || obj[len(obj)-1] != '}' {
		return false
	}
	// A slice of data, not a copy: the watch decoder decodes the object
	// (decodeObject, which copies what it keeps) before it reads the next
	// event into data's buffer (k8s.io/client-go/rest/watch.Decoder), so
	// that a 1 MB object is copied once, not twice.
	into.Type = string(typ)
	into.Object = runtime.RawExtension{Raw: obj}
	return true
}
