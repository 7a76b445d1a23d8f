package controller

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// TestCatchUp: caught up once every listed key was reconciled, whether the
// reconciles came before or after the list was complete, and only once.
func TestCatchUp(t *testing.T) {
	var buf bytes.Buffer
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&buf)))
	c := newCatchUp(klog.Logger(log), time.Now())
	a, b := cache.NewObjectName("ns", "a"), cache.NewObjectName("ns", "b")
	c.done(a) // reconciled while the list streams in
	if strings.Contains(buf.String(), "Caught up") {
		t.Fatal("caught up before the list was complete")
	}
	c.listed([]cache.ObjectName{a, b})
	if strings.Contains(buf.String(), "Caught up") {
		t.Fatal("caught up with ns/b pending")
	}
	c.done(b)
	c.done(b)
	if n := strings.Count(buf.String(), "Caught up"); n != 1 {
		t.Fatalf("logged %d times: %s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "objects=2") {
		t.Fatalf("log: %s", buf.String())
	}
}
