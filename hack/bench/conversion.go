package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tmplop/operator/engine/catalog"
	"github.com/tmplop/operator/hack/bench/internal/benchapp"
	"github.com/tmplop/operator/hack/bench/internal/procfs"
)

// The -conversion mode: the cost of the operator's CRD conversion webhook
// to the clients of a kind at a version the API server must convert
// (issue 33: "a list of 1,000 objects must not cost more than a list
// without conversion by more than the render itself").
//
// On one fresh plane: the operator runs with --install-crds and
// --webhook-bind-address on the Memcached of two versions
// (examples/versions/templates/memcached: v1 the hub and storage
// version, v1alpha1 converted by templates), and installs its CRD, whose
// conversion is the webhook. The baseline is the same CRD under another
// group, its v1alpha1 of v1's schema and its conversion None: the API
// server only rewrites apiVersion. N objects of each are created at v1 in
// namespace conv (not the operator's: it reconciles none of them). Each of
// -runs runs writes every object of each kind (a label) until a LIST at
// v1alpha1 returns them, then times a LIST of all of them at v1alpha1,
// baseline and webhook interleaved, and again. kube-apiserver keeps a
// watch cache per version of a CRD, holding objects at that version: it
// converts each object as it is written and serves a LIST from the cache,
// so the writes are timed too, and its calls to the webhook counted
// (apiserver_conversion_webhook_duration_seconds). The render itself is
// the same objects through the folder's Converter in this process, as one
// list and one at a time. The operator's peak RSS (VmHWM) is read before
// its first conversion and after the last.
const (
	convNamespace = "conv"
	convGroup     = "cache.example.com"
	baseGroup     = "none.bench.tmplop.io"
	convFolder    = "examples/versions/templates/memcached"
	convFiles     = "benchmarks-conversion"
)

// conversionRun is one N's figures.
type conversionRun struct {
	N int `json:"n"`
	// NoneSeconds and WebhookSeconds are each LIST at v1alpha1 just after
	// every object was written (each object converted), by run;
	// NoneWarmSeconds and WebhookWarmSeconds the LIST again (the API
	// server reuses each object's encoding at v1alpha1: no conversion).
	NoneSeconds        []float64 `json:"noneSeconds"`
	WebhookSeconds     []float64 `json:"webhookSeconds"`
	NoneWarmSeconds    []float64 `json:"noneWarmSeconds"`
	WebhookWarmSeconds []float64 `json:"webhookWarmSeconds"`
	// RenderSeconds is each ConvertList of the N objects in the bench's
	// process (on every CPU, as a review of N objects is converted);
	// RenderOneSeconds each conversion of the N objects one at a time, as
	// N reviews of one object sent one after the other are.
	RenderSeconds    []float64 `json:"renderSeconds"`
	RenderOneSeconds []float64 `json:"renderOneSeconds"`
	// NoneBytes and WebhookBytes are the size of a LIST's response body.
	NoneBytes    int `json:"noneBytes"`
	WebhookBytes int `json:"webhookBytes"`
	// PeakRSSIdleBytes is the operator's VmHWM once its kind is served and
	// the baseline warmed up, before any conversion; PeakRSSBytes after
	// the last; RSSAnonBytes what of it was anonymous then.
	PeakRSSIdleBytes int64 `json:"peakRSSIdleBytes"`
	PeakRSSBytes     int64 `json:"peakRSSBytes"`
	RSSAnonBytes     int64 `json:"rssAnonBytes"`
	// WriteNoneSeconds and WriteWebhookSeconds are each run's writes of
	// the N objects (a label, createConcurrency at a time, at v1), until a
	// LIST at v1alpha1 returns them: it waits for the version's watch
	// cache, which converts each object written.
	WriteNoneSeconds    []float64 `json:"writeNoneSeconds"`
	WriteWebhookSeconds []float64 `json:"writeWebhookSeconds"`
	// WebhookCalls and WebhookCallSeconds are what kube-apiserver counts
	// of its calls to the webhook during the writes
	// (apiserver_conversion_webhook_duration_seconds: the round trip, its
	// encoding of the review and decoding of the answer included);
	// WebhookListCalls its calls during the timed LISTs.
	WebhookCalls       int64   `json:"webhookCalls"`
	WebhookCallSeconds float64 `json:"webhookCallSeconds"`
	WebhookListCalls   int64   `json:"webhookListCalls"`
	LoadBefore         float64 `json:"loadBefore"`
	LoadAfter          float64 `json:"loadAfter"`
	Error              string  `json:"error,omitempty"`
}

type conversionReport struct {
	Date         string           `json:"date"`
	Command      string           `json:"command"`
	Runs         int              `json:"runs"`
	OperatorArgs string           `json:"operatorArgs"`
	Machine      machine          `json:"machine"`
	Results      []*conversionRun `json:"results"`
}

// runConversionBench measures each N on a fresh plane and writes
// benchmarks-conversion.{md,json} into -out.
func runConversionBench(ctx context.Context, f benchFlags, args []string, log io.Writer) error {
	work, err := os.MkdirTemp("", "tmplop-bench-conversion-")
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	fmt.Fprintf(log, "bench: files (kubeconfigs, operator output) in %s\n", work)
	rep := &conversionReport{
		Date: time.Now().UTC().Format(time.RFC3339), Command: strings.Join(append([]string{"go run ."}, args...), " "), Runs: f.runs,
		OperatorArgs: strings.Join(conversionArgs("<templates>", "<service account kubeconfig>"), " "),
	}
	for _, n := range f.ns {
		fmt.Fprintf(log, "bench: conversion, N=%d\n", n)
		res := &conversionRun{N: n, LoadBefore: loadAverage()}
		m, err := onPlane(ctx, f, filepath.Join(work, fmt.Sprintf("n%d", n)), log, func(b *bench) error {
			return b.measureConversion(ctx, n, f.runs, res)
		})
		res.LoadAfter = loadAverage()
		if m != nil {
			rep.Machine = *m
		}
		if err != nil {
			res.Error = err.Error()
			fmt.Fprintf(log, "bench: conversion, N=%d: %v\n", n, err)
		}
		rep.Results = append(rep.Results, res)
		if ctx.Err() != nil {
			break
		}
	}
	if err := writeConversionReport(f.out, rep); err != nil {
		return err
	}
	fmt.Fprintf(log, "bench: wrote %s\n", filepath.Join(f.out, convFiles+".{md,json}"))
	for _, r := range rep.Results {
		if r.Error != "" {
			return fmt.Errorf("conversion, N=%d: %s", r.N, r.Error)
		}
	}
	return nil
}

// conversionArgs runs the operator with the webhook on a local port and
// the CRDs installed by it; --namespace keeps it off the objects read.
func conversionArgs(templates, kubeconfig string) []string {
	return []string{"run", "--templates", templates, "--namespace", opNamespace, "--kubeconfig", kubeconfig,
		"--state-namespace", systemNamespace, "--install-crds", "--webhook-bind-address", "127.0.0.1:0"}
}

func (b *bench) measureConversion(ctx context.Context, n, runs int, res *conversionRun) error {
	templates := filepath.Join(b.dir, "templates")
	folder := filepath.Join(templates, "memcached")
	if err := os.CopyFS(folder, os.DirFS(filepath.Join(b.root, convFolder))); err != nil {
		return fmt.Errorf("copy %s: %w", convFolder, err)
	}
	r := &runner{dir: b.dir}
	defer r.close()
	op, _, err := r.startOperator(b.bin, conversionArgs(templates, b.kubeconfig)...)
	if err != nil {
		return err
	}
	b.logf("conversion: operator is pid %d, its output in %s", op.PID(), filepath.Join(r.lastDir(), "operator.log"))
	wctx, cancel := untilExit(ctx, op, 60*time.Second)
	err = op.WaitForOutput(wctx, `"Serving kind"`)
	cancel()
	if err != nil {
		return fmt.Errorf("the operator serves no kind: %w", err)
	}
	webhookCRD := "memcacheds." + convGroup
	crd, err := b.waitEstablished(ctx, webhookCRD, true)
	if err != nil {
		return err
	}
	if err := b.installBaseline(ctx, crd); err != nil {
		return err
	}
	if err := createNamespace(ctx, b.cs, convNamespace); err != nil {
		return err
	}
	for _, group := range []string{baseGroup, convGroup} {
		if err := createMemcacheds(ctx, b, group, n); err != nil {
			return err
		}
	}

	// Warm up: the baseline first, so that the idle peak is read with
	// everything but a conversion done.
	if res.NoneBytes, _, err = b.listAt(ctx, baseGroup, n); err != nil {
		return err
	}
	if res.PeakRSSIdleBytes, err = op.PeakRSS(); err != nil {
		return err
	}
	if res.WebhookBytes, _, err = b.listAt(ctx, convGroup, n); err != nil {
		return err
	}
	for i := range runs {
		// Every object written, so that the API server converts each
		// again: it keeps each object's encoding at a version, and a read
		// of an object unchanged converts nothing.
		for _, group := range []string{baseGroup, convGroup} {
			calls0, secs0, err := b.webhookCalls(ctx)
			if err != nil {
				return err
			}
			start := time.Now()
			if err := touchMemcacheds(ctx, b, group, n, i); err != nil {
				return err
			}
			// The writes are done when the version's watch cache has
			// them: a LIST at v1alpha1 waits for it to catch up.
			if _, _, err := b.listAt(ctx, group, n); err != nil {
				return err
			}
			took := time.Since(start).Seconds()
			calls1, secs1, err := b.webhookCalls(ctx)
			if err != nil {
				return err
			}
			if group == baseGroup {
				res.WriteNoneSeconds = append(res.WriteNoneSeconds, took)
			} else {
				res.WriteWebhookSeconds = append(res.WriteWebhookSeconds, took)
				res.WebhookCalls += calls1 - calls0
				res.WebhookCallSeconds += secs1 - secs0
			}
		}
		// Which goes first alternates, so that neither always follows the
		// writes.
		groups := []string{baseGroup, convGroup}
		if i%2 == 1 {
			slices.Reverse(groups)
		}
		for _, warm := range []bool{false, true} {
			for _, group := range groups {
				calls0, _, err := b.webhookCalls(ctx)
				if err != nil {
					return err
				}
				_, took, err := b.listAt(ctx, group, n)
				if err != nil {
					return fmt.Errorf("run %d: %w", i+1, err)
				}
				calls1, _, err := b.webhookCalls(ctx)
				if err != nil {
					return err
				}
				switch {
				case group == baseGroup && !warm:
					res.NoneSeconds = append(res.NoneSeconds, took.Seconds())
				case group == baseGroup:
					res.NoneWarmSeconds = append(res.NoneWarmSeconds, took.Seconds())
				case !warm:
					res.WebhookSeconds = append(res.WebhookSeconds, took.Seconds())
					res.WebhookListCalls += calls1 - calls0
				default:
					res.WebhookWarmSeconds = append(res.WebhookWarmSeconds, took.Seconds())
					res.WebhookListCalls += calls1 - calls0
				}
			}
		}
		b.logf("conversion: run %d of %d: LIST at v1alpha1 of objects just written, None %.1fms, webhook %.1fms; again, None %.1fms, webhook %.1fms",
			i+1, runs, res.NoneSeconds[i]*1000, res.WebhookSeconds[i]*1000, res.NoneWarmSeconds[i]*1000, res.WebhookWarmSeconds[i]*1000)
	}
	if res.PeakRSSBytes, err = op.PeakRSS(); err != nil {
		return err
	}
	if res.RSSAnonBytes, _, err = procfs.RSSSplit(op.PID()); err != nil {
		return err
	}
	if err := op.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	if _, _, err := op.Wait(stopTimeout); err != nil {
		return err
	}
	// The render itself, with the operator stopped: the same objects, as
	// the webhook receives them (read at the hub), converted in-process.
	if res.RenderSeconds, res.RenderOneSeconds, err = b.renderList(ctx, folder, runs); err != nil {
		return err
	}
	b.logf("conversion: N=%d: LIST at v1alpha1 median None %.1fms, webhook %.1fms (again: %.1fms, %.1fms; %d webhook calls); writes None %.2fs, webhook %.2fs, %d webhook calls of %.3fms on average; render %.1fms (one at a time %.1fms); peak RSS %d MiB idle, %d MiB after",
		n, median(res.NoneSeconds)*1000, median(res.WebhookSeconds)*1000, median(res.NoneWarmSeconds)*1000, median(res.WebhookWarmSeconds)*1000, res.WebhookListCalls,
		median(res.WriteNoneSeconds), median(res.WriteWebhookSeconds), res.WebhookCalls, res.WebhookCallSeconds*1000/float64(max(res.WebhookCalls, 1)),
		median(res.RenderSeconds)*1000, median(res.RenderOneSeconds)*1000, res.PeakRSSIdleBytes>>20, res.PeakRSSBytes>>20)
	return nil
}

// waitEstablished waits for the operator's CRD to be Established with its
// conversion webhook.
func (b *bench) waitEstablished(ctx context.Context, name string, webhook bool) (*unstructured.Unstructured, error) {
	var last error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		u, err := b.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", name, err)
		}
		established := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
		})
		if established && webhook && (crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.WebhookConverter) {
			return nil, fmt.Errorf("CRD %s converts with %v, not the webhook", name, crd.Spec.Conversion)
		}
		if established {
			return u, nil
		}
		last = fmt.Errorf("not Established: %+v", crd.Status.Conditions)
	}
	return nil, fmt.Errorf("CRD %s: %w", name, last)
}

// installBaseline installs the webhook CRD's twin under baseGroup: the
// same versions, names and columns, v1alpha1 of v1's schema, conversion
// None.
func (b *bench) installBaseline(ctx context.Context, crd *unstructured.Unstructured) error {
	spec, ok := crd.Object["spec"].(map[string]any)
	if !ok {
		return fmt.Errorf("CRD %s has no spec", crd.GetName())
	}
	spec = runtime.DeepCopyJSONValue(spec).(map[string]any)
	spec["group"] = baseGroup
	spec["conversion"] = map[string]any{"strategy": "None"}
	versions, _ := spec["versions"].([]any)
	var hub map[string]any
	for _, v := range versions {
		if v := v.(map[string]any); v["name"] == "v1" {
			hub = v
		}
	}
	if hub == nil || len(versions) != 2 {
		return fmt.Errorf("CRD %s: want versions v1alpha1 and v1, has %d", crd.GetName(), len(versions))
	}
	for _, v := range versions {
		v := v.(map[string]any)
		v["schema"], v["additionalPrinterColumns"] = runtime.DeepCopyJSONValue(hub["schema"]), runtime.DeepCopyJSONValue(hub["additionalPrinterColumns"])
	}
	name := "memcacheds." + baseGroup
	base := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiextensionsv1.SchemeGroupVersion.String(), "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
	if _, err := b.dyn.Resource(crdGVR).Create(ctx, base, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create CRD %s: %w", name, err)
	}
	_, err := b.waitEstablished(ctx, name, false)
	return err
}

// createMemcacheds creates n Memcacheds of group at v1 in convNamespace.
func createMemcacheds(ctx context.Context, b *bench, group string, n int) error {
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "memcacheds"}
	return benchapp.ForEach(ctx, n, createConcurrency, func(ctx context.Context, i int) error {
		o := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": group + "/v1", "kind": "Memcached",
			"metadata": map[string]any{"name": fmt.Sprintf("cache-%05d", i), "namespace": convNamespace,
				"labels": map[string]any{"app.kubernetes.io/name": "memcached", "team": "platform"}},
			"spec": map[string]any{"replicas": int64(i % 5)},
		}}
		for {
			_, err := b.dyn.Resource(gvr).Namespace(convNamespace).Create(ctx, o, metav1.CreateOptions{})
			// The API server may not serve a CRD just Established yet.
			if apierrors.IsNotFound(err) && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if err != nil {
				return fmt.Errorf("create Memcached %s %s: %w", group, o.GetName(), err)
			}
			return nil
		}
	})
}

// listAt times one LIST of group's Memcacheds at v1alpha1 (the body read,
// not decoded) and checks it holds n objects converted to v1alpha1.
func (b *bench) listAt(ctx context.Context, group string, n int) (int, time.Duration, error) {
	path := "/apis/" + group + "/v1alpha1/namespaces/" + convNamespace + "/memcacheds"
	start := time.Now()
	body, err := b.cs.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
	took := time.Since(start)
	if err != nil {
		return 0, took, fmt.Errorf("LIST %s: %w", path, err)
	}
	var l struct {
		Items []struct {
			APIVersion string         `json:"apiVersion"`
			Spec       map[string]any `json:"spec"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return 0, took, fmt.Errorf("LIST %s: %w", path, err)
	}
	if len(l.Items) != n {
		return 0, took, fmt.Errorf("LIST %s: %d objects, want %d", path, len(l.Items), n)
	}
	field := "replicas" // the baseline's v1alpha1 has v1's schema
	if group == convGroup {
		field = "size"
	}
	for _, it := range l.Items {
		if _, ok := it.Spec[field]; !ok || it.APIVersion != group+"/v1alpha1" {
			return 0, took, fmt.Errorf("LIST %s: an object at %s without spec.%s: %v", path, it.APIVersion, field, it.Spec)
		}
	}
	return len(body), took, nil
}

// renderList converts the webhook kind's objects, read at the hub as the
// API server sends them, to v1alpha1 with the folder's Converter, runs
// times as one list and runs times one at a time, after one of each to
// warm up.
func (b *bench) renderList(ctx context.Context, folder string, runs int) (list, one []float64, err error) {
	k, err := catalog.LoadKind(folder)
	if err != nil {
		return nil, nil, err
	}
	conv := k.Converter()
	if conv == nil {
		return nil, nil, fmt.Errorf("%s has no conversions", folder)
	}
	l, err := b.dyn.Resource(schema.GroupVersionResource{Group: convGroup, Version: "v1", Resource: "memcacheds"}).
		Namespace(convNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list Memcacheds at v1: %w", err)
	}
	to := convGroup + "/v1alpha1"
	for i := range runs + 1 {
		objs := make([]map[string]any, len(l.Items))
		for i := range l.Items {
			objs[i] = l.Items[i].DeepCopy().Object
		}
		start := time.Now()
		if _, err := conv.ConvertList(ctx, objs, to); err != nil {
			return nil, nil, fmt.Errorf("render the conversions: %w", err)
		}
		listTook := time.Since(start)
		start = time.Now()
		for _, o := range objs {
			if _, err := conv.Convert(ctx, o, to); err != nil {
				return nil, nil, fmt.Errorf("render a conversion: %w", err)
			}
		}
		if i > 0 {
			list, one = append(list, listTook.Seconds()), append(one, time.Since(start).Seconds())
		}
	}
	return list, one, nil
}

// touchMemcacheds writes every Memcached of group: a label with the run.
func touchMemcacheds(ctx context.Context, b *bench, group string, n, run int) error {
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "memcacheds"}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{"bench.tmplop.io/run":"%d"}}}`, run)
	return benchapp.ForEach(ctx, n, createConcurrency, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("cache-%05d", i)
		if _, err := b.dyn.Resource(gvr).Namespace(convNamespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("write Memcached %s %s: %w", group, name, err)
		}
		return nil
	})
}

// webhookCalls reads kube-apiserver's count and total seconds of its
// calls to conversion webhooks (apiserver_conversion_webhook_duration_seconds,
// per request; the Memcached's is the one webhook of the plane).
func (b *bench) webhookCalls(ctx context.Context) (int64, float64, error) {
	body, err := b.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("scrape /metrics: %w", err)
	}
	var count, sum float64
	for line := range strings.Lines(string(body)) {
		name, _, value, ok := parseSample(line)
		if !ok {
			continue
		}
		switch name {
		case "apiserver_conversion_webhook_duration_seconds_count":
			count += value
		case "apiserver_conversion_webhook_duration_seconds_sum":
			sum += value
		}
	}
	return int64(count), sum, nil
}
