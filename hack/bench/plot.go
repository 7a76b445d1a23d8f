package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	operatorColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	limitColor    = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	// controllerColor is the hand-written controller's.
	controllerColor = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	goalColor       = color.Gray{Y: 0x80}
)

// writePlot draws two panels against N, operator and limit in each:
// cold convergence time and peak RSS, the median of the cold runs with a
// bar from the least to the greatest.
func writePlot(path string, rep *report) error {
	conv, err := panel("Cold convergence", "seconds", fmt.Sprintf("goal (%.2f× limit)", goalConvergeRatio), rep, func(s *subject) (float64, bool) {
		return s.ColdSeconds, s.Cold != nil
	}, func(r runResult) (float64, bool) {
		l := spreadOf(coldRuns(r.Limits), func(s *subject) float64 { return s.ColdSeconds })
		return goalConvergeRatio * l.Median, l.Runs > 0
	})
	if err != nil {
		return err
	}
	mem, err := panel("Peak RSS", "MiB", "goal", rep, func(s *subject) (float64, bool) {
		return mib(s.PeakRSSBytes), s.PeakRSSBytes > 0
	}, func(r runResult) (float64, bool) {
		g, ok := goalRSS(r.N)
		return mib(g), ok
	})
	if err != nil {
		return err
	}
	img := vgimg.NewWith(vgimg.UseWH(10*vg.Inch, 4*vg.Inch), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	plots := [][]*plot.Plot{{conv, mem}}
	canvases := plot.Align(plots, tiles, dc)
	conv.Draw(canvases[0][0])
	mem.Draw(canvases[0][1])
	return writePNG(path, img)
}

// writePNG writes img into path.
func writePNG(path string, img *vgimg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", path, err)
	}
	return nil
}

// writeGrowthPlot draws the growth section's figures against N, one line
// per client that ran: anonymous RSS per object and CPU per object, N on
// a log axis (the sizes are 1,000, 10,000, 30,000), ticks at each N.
func writeGrowthPlot(path string, g *growth) error {
	anon, err := growthPanel("Anonymous RSS per object, cold", "bytes", g, func(f growthFigures) float64 { return f.anon })
	if err != nil {
		return err
	}
	cpu, err := growthPanel("CPU time per object, cold", "ms", g, func(f growthFigures) float64 { return 1000 * f.cpu })
	if err != nil {
		return err
	}
	img := vgimg.NewWith(vgimg.UseWH(10*vg.Inch, 4*vg.Inch), vgimg.UseBackgroundColor(color.White))
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{anon, cpu}}, tiles, draw.New(img))
	anon.Draw(canvases[0][0])
	cpu.Draw(canvases[0][1])
	return writePNG(path, img)
}

// growthPanel plots total / N of each client against N (the medians of
// the growth rows).
func growthPanel(title, unit string, g *growth, total func(growthFigures) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title + " (median of the cold runs)"
	p.X.Label.Text = "objects (N, log scale)"
	p.Y.Label.Text = unit
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, r := range g.rows {
		ticks = append(ticks, plot.Tick{Value: float64(r.n), Label: thousands(int64(r.n))})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Legend.Top, p.Legend.Left = true, true
	colors := []color.Color{operatorColor, controllerColor, limitColor} // by growthClients
	for _, i := range g.ran() {
		var pts plotter.XYs
		for _, r := range g.rows {
			f := r.clients[i]
			if v := total(f); f.runs > 0 && !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: float64(r.n), Y: v / float64(r.n)})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("plot %s of the %s: %w", title, growthClients[i].name, err)
		}
		line.Color, points.Color = colors[i], colors[i]
		points.Shape = draw.CircleGlyph{}
		points.Radius = vg.Points(3)
		p.Add(line, points)
		p.Legend.Add(growthClients[i].name, line, points)
	}
	// A log axis cannot start at zero: some room either side of the Ns.
	p.X.Min, p.X.Max = float64(g.rows[0].n)/1.5, float64(g.rows[len(g.rows)-1].n)*1.5
	p.Y.Min = 0
	p.Y.Max *= 1.3
	return p, nil
}

// panel plots value over the cold runs of the operator and of the limit
// against N, and the goal where there is one.
func panel(title, unit, goalName string, rep *report, value func(*subject) (float64, bool), goal func(runResult) (float64, bool)) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	if rep.Settings.Runs > 1 {
		p.Title.Text += fmt.Sprintf(" (median of %d runs, bars min to max)", rep.Settings.Runs)
	}
	p.X.Label.Text = "objects (N)"
	p.Y.Label.Text = unit
	p.Legend.Top, p.Legend.Left = true, true
	var goals plotter.XYs
	for _, r := range rep.Runs {
		if g, ok := goal(r); ok {
			goals = append(goals, plotter.XY{X: float64(r.N), Y: g})
		}
	}
	if len(goals) > 0 {
		line, points, err := plotter.NewLinePoints(goals)
		if err != nil {
			return nil, fmt.Errorf("plot the goal of %s: %w", title, err)
		}
		line.Color, points.Color = goalColor, goalColor
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		points.Shape = draw.BoxGlyph{}
		p.Add(line, points)
		p.Legend.Add(goalName, line, points)
	}
	for _, c := range []struct {
		name  string
		runs  func(runResult) []*subject
		color color.Color
	}{
		{"operator", func(r runResult) []*subject { return r.Operators }, operatorColor},
		{"limit", func(r runResult) []*subject { return r.Limits }, limitColor},
	} {
		var pts spreadPoints
		for _, r := range rep.Runs {
			var v []float64
			for _, s := range coldRuns(c.runs(r)) {
				if x, ok := value(s); ok {
					v = append(v, x)
				}
			}
			if len(v) == 0 {
				continue
			}
			m := median(v)
			pts.XYs = append(pts.XYs, plotter.XY{X: float64(r.N), Y: m})
			pts.YErrors = append(pts.YErrors, struct{ Low, High float64 }{m - slices.Min(v), slices.Max(v) - m})
		}
		if len(pts.XYs) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts.XYs)
		if err != nil {
			return nil, fmt.Errorf("plot %s of the %s: %w", title, c.name, err)
		}
		bars, err := plotter.NewYErrorBars(pts)
		if err != nil {
			return nil, fmt.Errorf("plot %s of the %s: %w", title, c.name, err)
		}
		line.Color, points.Color, bars.Color = c.color, c.color, c.color
		points.Shape = draw.CircleGlyph{}
		points.Radius = vg.Points(3)
		p.Add(line, points, bars)
		p.Legend.Add(c.name, line, points)
	}
	// From zero, with room above for the legend.
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max *= 1.1
	p.Y.Max *= 1.3
	return p, nil
}

// spreadPoints are medians with their least and greatest as error bars.
type spreadPoints struct {
	plotter.XYs
	plotter.YErrors
}
