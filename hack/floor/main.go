// Command floor links the libraries this project prescribes (client-go's
// dynamic client, dynamicinformer, workqueue, leaderelection and record;
// text/template with sprig; cobra; sigs.k8s.io/yaml) and nothing of the
// operator, uses each once, idles 3 seconds with an informer that cannot
// reach its server, and prints its peak and resident memory from
// /proc/self/status: the memory any operator built on those libraries
// starts from (docs/performance.md).
//
//	go run ./hack/floor 2>/dev/null
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/yaml"
)

func main() {
	cmd := &cobra.Command{Use: "floor", RunE: func(*cobra.Command, []string) error {
		cfg := &rest.Config{Host: "https://127.0.0.1:1"}
		dyn := dynamic.NewForConfigOrDie(cfg)
		f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, time.Minute)
		inf := f.ForResource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"})
		q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
		core := typedcorev1.NewForConfigOrDie(cfg)
		b := record.NewBroadcaster()
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: core.Events("")})
		_ = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "floor"})
		lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "ns", "floor", core, nil, resourcelock.ResourceLockConfig{Identity: "x"})
		if err != nil {
			return err
		}
		_ = lock
		_ = leaderelection.LeaderElectionConfig{}
		t := template.Must(template.New("x").Funcs(sprig.TxtFuncMap()).Parse(`{{ .a | upper }}`))
		var buf bytes.Buffer
		_ = t.Execute(&buf, map[string]any{"a": "b"})
		var m map[string]any
		_ = yaml.Unmarshal([]byte("a: 1"), &m)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		go inf.Informer().Run(ctx.Done())
		<-ctx.Done()
		q.ShutDown()
		_, _ = buf.String(), m
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(status), "\n") {
			for _, key := range []string{"VmHWM:", "RssAnon:", "RssFile:"} {
				if strings.HasPrefix(line, key) {
					fmt.Println(strings.Join(strings.Fields(line), " "))
				}
			}
		}
		return nil
	}}
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
