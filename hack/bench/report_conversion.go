package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeConversionReport writes benchmarks-conversion.{md,json} into dir.
func writeConversionReport(dir string, rep *conversionReport) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	base := filepath.Join(dir, convFiles)
	if err := os.WriteFile(base+".json", append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if err := os.WriteFile(base+".md", conversionMarkdown(rep), 0o644); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// rerenderConversion writes the report of an earlier -conversion run
// again, from its JSON.
func rerenderConversion(path, out string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	var rep conversionReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("render: decode %s: %w", path, err)
	}
	return writeConversionReport(out, &rep)
}

// conversionFigures are one N's medians, per object where it says so.
type conversionFigures struct {
	none, webhook, noneWarm, webhookWarm spread // a LIST's seconds
	writeNone, writeWebhook              spread // the N writes' seconds
	render, renderOne                    spread // the N conversions' seconds
	// listPerObject is (webhook - none) / N of the medians, after the
	// writes; writePerObject the same of the writes.
	listPerObject, writePerObject float64
	// renderPerObject and renderOnePerObject are render / N and
	// renderOne / N.
	renderPerObject, renderOnePerObject float64
	// callsPerWrite and callSeconds: the API server's webhook calls per
	// object written, and their mean duration.
	callsPerWrite, callSeconds float64
}

func figuresOf(r *conversionRun) conversionFigures {
	sp := func(v []float64) spread { return spreadOf(v, func(x float64) float64 { return x }) }
	f := conversionFigures{none: sp(r.NoneSeconds), webhook: sp(r.WebhookSeconds), noneWarm: sp(r.NoneWarmSeconds),
		webhookWarm: sp(r.WebhookWarmSeconds), writeNone: sp(r.WriteNoneSeconds), writeWebhook: sp(r.WriteWebhookSeconds),
		render: sp(r.RenderSeconds), renderOne: sp(r.RenderOneSeconds)}
	if n := float64(r.N); n > 0 {
		f.listPerObject = (f.webhook.Median - f.none.Median) / n
		f.writePerObject = (f.writeWebhook.Median - f.writeNone.Median) / n
		f.renderPerObject, f.renderOnePerObject = f.render.Median/n, f.renderOne.Median/n
		if writes := n * float64(len(r.WriteWebhookSeconds)); writes > 0 {
			f.callsPerWrite = float64(r.WebhookCalls) / writes
		}
	}
	if r.WebhookCalls > 0 {
		f.callSeconds = r.WebhookCallSeconds / float64(r.WebhookCalls)
	}
	return f
}

// withinGoal: issue 33's "a list of 1,000 objects must not cost more than
// a list without conversion by more than the render itself".
func (f conversionFigures) withinGoal() bool { return f.listPerObject <= f.renderPerObject }

func conversionMarkdown(rep *conversionReport) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# The conversion webhook: reads and writes at a version the API server converts")
	w("")
	w("Measured %s on %d cores (%s), %.1f GiB, Kubernetes %s, %s; %s.", rep.Date, rep.Machine.Cores, rep.Machine.CPU,
		float64(rep.Machine.MemoryBytes)/(1<<30), rep.Machine.Kubernetes, rep.Machine.Go, rep.Machine.Plane)
	w("")
	w("    cd hack/bench && %s", rep.Command)
	w("")
	w("The Memcached of %s (v1 the hub and storage version, v1alpha1 converted by its", convFolder)
	w("templates), its CRD installed by the operator (`%s`) with its conversion webhook; the", rep.OperatorArgs)
	w("baseline is the same CRD under group %s, its v1alpha1 of v1's schema and its conversion None.", baseGroup)
	w("N objects of each stored at v1. Each of %d runs writes every object of each (a label, at v1, %d at a", rep.Runs, createConcurrency)
	w("time) until a LIST at v1alpha1 returns them, then LISTs all of them at v1alpha1 (the body read, not")
	w("decoded), baseline and webhook interleaved, and again. The render is the same N objects through the")
	w("folder's Converter in the bench's process: as one list (on every CPU) and one at a time. Medians,")
	w("least-greatest.")
	w("")
	w("The API server keeps a watch cache per version of a CRD, of objects at that version: it converts")
	w("each object as it is written and serves a LIST from the cache: a LIST at v1alpha1 then sends the")
	w("webhook no list of objects (its calls during the LISTs are counted below), and what conversion")
	w("costs is paid by the writes.")
	w("")
	w("| N | LIST after the writes, None | webhook | difference an object | LIST again, None | webhook | render an object (list; one at a time) | goal: difference <= render |")
	w("|---|---|---|---|---|---|---|---|")
	for _, r := range rep.Results {
		if r.Error != "" {
			w("| %d | error: %s | | | | | | |", r.N, oneLine(r.Error))
			continue
		}
		f := figuresOf(r)
		w("| %s | %s | %s | %.1f us | %s | %s | %.1f us; %.1f us | %s |", thousands(int64(r.N)),
			msSpread(f.none), msSpread(f.webhook), f.listPerObject*1e6, msSpread(f.noneWarm), msSpread(f.webhookWarm),
			f.renderPerObject*1e6, f.renderOnePerObject*1e6, verdictMark(f.withinGoal()))
	}
	w("")
	w("| N | N writes, None | webhook | difference a write | webhook calls a write | a call, mean (API server) | calls in the LISTs | operator peak RSS before the first conversion | after | anonymous after |")
	w("|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rep.Results {
		if r.Error != "" {
			continue
		}
		f := figuresOf(r)
		w("| %s | %s | %s | %.1f us | %.2f | %.2f ms | %d | %.1f MiB | %.1f MiB | %.1f MiB |", thousands(int64(r.N)),
			sSpread(f.writeNone), sSpread(f.writeWebhook), f.writePerObject*1e6, f.callsPerWrite, f.callSeconds*1000,
			r.WebhookListCalls, mib(r.PeakRSSIdleBytes), mib(r.PeakRSSBytes), mib(r.RSSAnonBytes))
	}
	w("")
	for _, r := range rep.Results {
		if r.Error != "" {
			continue
		}
		w("N=%s: a LIST's body of %s bytes (None) and %s (webhook); the LISTs after the writes in order, None/webhook ms: %s; the load average %.2f before, %.2f after.",
			thousands(int64(r.N)), thousands(int64(r.NoneBytes)), thousands(int64(r.WebhookBytes)), pairs(r.NoneSeconds, r.WebhookSeconds),
			r.LoadBefore, r.LoadAfter)
		w("")
	}
	return b.Bytes()
}

func sSpread(s spread) string { return fmt.Sprintf("%.2f s (%.2f-%.2f)", s.Median, s.Min, s.Max) }

func msSpread(s spread) string {
	return fmt.Sprintf("%.1f ms (%.1f-%.1f)", s.Median*1000, s.Min*1000, s.Max*1000)
}

// pairs lists the runs' times side by side, in ms (the runs were
// interleaved: a[i] just before b[i]).
func pairs(a, b []float64) string {
	var out []string
	for i := range min(len(a), len(b)) {
		out = append(out, fmt.Sprintf("%.0f/%.0f", a[i]*1000, b[i]*1000))
	}
	return strings.Join(out, ", ")
}
