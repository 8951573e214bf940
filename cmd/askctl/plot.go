package main

import (
	"fmt"
	"html"
	"math"
	"os"
	"strings"
	"time"

	"github.com/askctl/askctl/bench"
)

// writePlot draws both latencies of every question over the run, on a log
// scale, as an SVG with no dependencies.
func writePlot(path string, rep *bench.Report) error {
	const (
		w, h                     = 800, 420
		left, right, top, bottom = 70, 20, 56, 50
	)
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	maxT := 1e-9
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range rep.Points {
		maxT = math.Max(maxT, p.At)
		for _, d := range []time.Duration{p.Deliver, p.Answer} {
			if d > 0 {
				ms := float64(d) / 1e6
				lo, hi = math.Min(lo, ms), math.Max(hi, ms)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0.1, 1
	}
	decLo, decHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if decHi <= decLo {
		decHi = decLo + 1
	}
	x := func(t float64) float64 { return float64(left) + t/maxT*pw }
	y := func(ms float64) float64 {
		return float64(top) + ph - (math.Log10(ms)-decLo)/(decHi-decLo)*ph
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", w, h)
	title := fmt.Sprintf("askctl bench: %s, %s, %d sessions, %d at once, %.1f/s", rep.Bridge, rep.Scenario, rep.Sessions, rep.Concurrency, rep.PerSecond)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">%s</text>`+"\n", left, html.EscapeString(title))
	// Axes and grid: one line a decade.
	for d := decLo; d <= decHi; d++ {
		ms := math.Pow(10, d)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, w-right, y(ms), y(ms))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y(ms)+4, msLabel(ms))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#333"/>`+"\n", left, w-right, h-bottom, h-bottom)
	for i := 0; i <= 5; i++ {
		t := maxT * float64(i) / 5
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.1fs</text>`+"\n", x(t), h-bottom+16, t)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">session start in the run</text>`+"\n", left+int(pw/2), h-12)
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">latency (log scale)</text>`+"\n", top+int(ph/2))
	series := []struct {
		name, color string
		get         func(bench.Point) time.Duration
	}{
		{"question → surface", "#2b59c3", func(p bench.Point) time.Duration { return p.Deliver }},
		{"answer → agent", "#d9730d", func(p bench.Point) time.Duration { return p.Answer }},
	}
	for i, s := range series {
		fmt.Fprintf(&b, `<g fill="%s" fill-opacity="0.6">`+"\n", s.color)
		for _, p := range rep.Points {
			if d := s.get(p); d > 0 {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2"/>`+"\n", x(p.At), y(float64(d)/1e6))
			}
		}
		b.WriteString("</g>\n")
		lx := left + i*170
		fmt.Fprintf(&b, `<circle cx="%d" cy="38" r="4" fill="%s"/><text x="%d" y="42">%s</text>`+"\n", lx, s.color, lx+8, html.EscapeString(s.name))
	}
	b.WriteString("</svg>\n")
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func msLabel(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%gs", ms/1000)
	case ms >= 1:
		return fmt.Sprintf("%gms", ms)
	}
	return fmt.Sprintf("%gµs", ms*1000)
}
