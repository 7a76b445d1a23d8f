package certwatch

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// The files of a kubernetes.io/tls Secret, as controller-runtime and
// cert-manager name them.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// PollInterval: the files are read again this often, a safety net behind
// file events (controller-runtime's certwatcher polls every 10 s too).
const PollInterval = 10 * time.Second

// Debounce lets the writer of a certificate and its key finish both
// before they are read, so that a rotation is not logged as a mismatch.
const Debounce = 100 * time.Millisecond

// Options choose what a Watcher reads.
type Options struct {
	// Dir holds CertFile and KeyFile, and CAFile when WithCA.
	Dir string
	// What names the certificate in errors and logs ("metrics
	// certificate").
	What string
	// WithCA reads CAFile too (CA returns it); a missing CAFile is then
	// not an error (cert-manager's CA injector may serve the bundle
	// instead), but one that holds no certificate is.
	WithCA bool
	// OnChange, when set, is called after each reload that changed what
	// is served (not at the first load), from the watch's goroutine.
	OnChange func()
}

// served is one consistent reading of the files.
type served struct {
	cert *tls.Certificate
	ca   []byte
}

// Watcher serves the certificate of a directory, read again when it
// changes (Watch).
type Watcher struct {
	opts    Options
	current atomic.Pointer[served]
	// The bytes current was parsed from: a read that finds them unchanged
	// parses nothing (only the watch's goroutine uses them after Load).
	certPEM, keyPEM, caPEM []byte
}

// Load reads opts.Dir's files; Watch reads them again when they change.
func Load(opts Options) (*Watcher, error) {
	if opts.What == "" {
		opts.What = "certificate"
	}
	w := &Watcher{opts: opts}
	if _, err := w.Reload(); err != nil {
		return nil, err
	}
	return w, nil
}

// GetCertificate is tls.Config.GetCertificate.
func (w *Watcher) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return w.current.Load().cert, nil
}

// Certificate is the certificate served.
func (w *Watcher) Certificate() *tls.Certificate { return w.current.Load().cert }

// CA is the content of CAFile as last read (nil without WithCA, or when
// the directory has none).
func (w *Watcher) CA() []byte { return w.current.Load().ca }

// Path is the certificate file's path, for logs.
func (w *Watcher) Path() string { return filepath.Join(w.opts.Dir, CertFile) }

// Reload reads the files again and serves them when they changed and hold
// a certificate and its key; else what is served is kept.
func (w *Watcher) Reload() (changed bool, err error) {
	certPEM, err := os.ReadFile(filepath.Join(w.opts.Dir, CertFile))
	if err != nil {
		return false, fmt.Errorf("%s: %w", w.opts.What, err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(w.opts.Dir, KeyFile))
	if err != nil {
		return false, fmt.Errorf("%s key: %w", w.opts.What, err)
	}
	var caPEM []byte
	if w.opts.WithCA {
		caPEM, err = os.ReadFile(filepath.Join(w.opts.Dir, CAFile))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("%s CA: %w", w.opts.What, err)
		}
	}
	if w.current.Load() != nil && bytes.Equal(certPEM, w.certPEM) && bytes.Equal(keyPEM, w.keyPEM) && bytes.Equal(caPEM, w.caPEM) {
		return false, nil
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("%s in %s: %s and %s: %w", w.opts.What, w.opts.Dir, CertFile, KeyFile, err)
	}
	if len(caPEM) > 0 && !x509.NewCertPool().AppendCertsFromPEM(caPEM) {
		return false, fmt.Errorf("%s in %s: %s holds no PEM certificate", w.opts.What, w.opts.Dir, CAFile)
	}
	w.current.Store(&served{cert: &cert, ca: caPEM})
	w.certPEM, w.keyPEM, w.caPEM = certPEM, keyPEM, caPEM
	return true, nil
}

// Watch reloads the files on the directory's events and every
// PollInterval until ctx is done or stop is closed (nil: never). It
// watches the directory, not the files: a Secret's volume swaps a
// symbolic link to a new directory of files, and editors replace files by
// renaming.
func (w *Watcher) Watch(ctx context.Context, stop <-chan struct{}) {
	w.watch(ctx, stop, PollInterval)
}

func (w *Watcher) watch(ctx context.Context, stop <-chan struct{}, poll time.Duration) {
	log := klog.FromContext(ctx).WithValues("dir", w.opts.Dir, "what", w.opts.What)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if fw, err := fsnotify.NewWatcher(); err != nil {
		log.Error(err, "No file events for the certificate; reading it every interval", "interval", poll.String())
	} else {
		defer fw.Close()
		if err := fw.Add(w.opts.Dir); err != nil {
			log.Error(err, "No file events for the certificate; reading it every interval", "interval", poll.String())
		} else {
			events, errs = fw.Events, fw.Errors
		}
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	debounce := time.NewTimer(0)
	<-debounce.C
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-events:
			debounce.Reset(Debounce)
			continue
		case err := <-errs:
			log.V(1).Info("File events of the certificate", "err", err.Error())
			continue
		case <-debounce.C:
		case <-ticker.C:
		}
		changed, err := w.Reload()
		switch {
		case err != nil:
			// Logged once per distinct error, not at every poll.
			if err.Error() != lastErr {
				log.Error(err, "Certificate not reloaded; serving the previous one")
			}
			lastErr = err.Error()
		case changed:
			lastErr = ""
			log.Info("Certificate reloaded", "notAfter", NotAfter(w.Certificate()))
			if w.opts.OnChange != nil {
				w.opts.OnChange()
			}
		}
	}
}

// NotAfter is the end of cert's validity in RFC 3339, "" when unknown: for
// logs.
func NotAfter(cert *tls.Certificate) string {
	if cert == nil || len(cert.Certificate) == 0 {
		return ""
	}
	x := cert.Leaf
	if x == nil {
		var err error
		if x, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return ""
		}
	}
	return x.NotAfter.UTC().Format(time.RFC3339)
}
