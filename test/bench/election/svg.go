package main

import (
	"fmt"
	"html"
	"math"
	"strings"
	"time"
)

// The chart: one row of panels per configuration, a crash sample on the
// left and a graceful sample on the right, each with one lane per
// candidate. Plain SVG, built by hand.
const (
	chartWidth  = 1280
	crashLeft   = 270
	crashRight  = 880
	graceLeft   = 940
	graceRight  = 1260
	chartTop    = 80
	laneHeight  = 22
	blockHeight = 3*laneHeight + 48
)

var laneColors = []string{"#4e79a7", "#f28e2b", "#59a14f"}

type panel struct {
	g          *group
	rs         []request
	left       float64
	right      float64
	tmin, tmax float64 // seconds from the cancel
}

func (p panel) x(t float64) float64 {
	t = math.Max(p.tmin, math.Min(p.tmax, t))
	return p.left + (t-p.tmin)/(p.tmax-p.tmin)*(p.right-p.left)
}

func (p panel) rel(t time.Time) float64 { return t.Sub(p.g.cancelAt).Seconds() }

func (r *results) chart() string {
	crs := r.perConfiguration()
	crashMax, graceMax := 10.0, 3.0
	for _, cr := range crs {
		if g := cr.exampleCrash; g != nil {
			crashMax = math.Max(crashMax, g.takeover().Seconds())
		}
		if g := cr.exampleGraceful; g != nil {
			graceMax = math.Max(graceMax, g.takeover().Seconds())
		}
	}
	height := chartTop + len(crs)*blockHeight + 40
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", chartWidth, height, chartWidth, height)
	w(`<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#ffffff"/><line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="3"/></pattern></defs>` + "\n")
	w(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	w(`<text x="10" y="20" font-size="15" font-weight="bold">Lease requests and holder around the leader's stop (audit log), per configuration</text>` + "\n")
	w(`<text x="%d" y="44" font-size="12" font-weight="bold">crash: stopped without release (time from the stop, s)</text>`+"\n", crashLeft)
	w(`<text x="%d" y="44" font-size="12" font-weight="bold">graceful: stopped with release (s)</text>`+"\n", graceLeft)
	// Legend.
	lx := 10.0
	legend := func(mark, text string) {
		w(`%s<text x="%.1f" y="66">%s</text>`+"\n", mark, lx+12, html.EscapeString(text))
		lx += 12 + float64(len(text))*6.2 + 18
	}
	legend(square(lx+4, 62, "#222", true), "write (create/update) accepted")
	legend(square(lx+4, 62, "#d62728", false), "write refused (409)")
	legend(circle(lx+4, 62), "read (get/list)")
	legend(triangle(lx+4, 62), "watch request (line: stream open)")
	w(`<rect x="%.1f" y="57" width="10" height="10" fill="%s" opacity="0.45"/>`, lx, laneColors[0])
	legend("", "holds the Lease")
	w(`<rect x="%.1f" y="57" width="10" height="10" fill="url(#hatch)" stroke="#999"/>`, lx)
	legend("", "Lease still names the stopped leader")

	for i, cr := range crs {
		top := float64(chartTop + i*blockHeight)
		w(`<text x="10" y="%.1f" font-size="12" font-weight="bold">%s</text>`+"\n", top+20, html.EscapeString(cr.cfg.name))
		w(`<text x="10" y="%.1f" fill="#555">%s</text>`+"\n", top+36, html.EscapeString(cr.cfg.timingsText()))
		if g := cr.exampleCrash; g != nil {
			drawPanel(&b, panel{g: g, rs: r.requests[g.ns], left: crashLeft, right: crashRight, tmin: -15, tmax: crashMax + 8}, top)
		}
		if g := cr.exampleGraceful; g != nil {
			drawPanel(&b, panel{g: g, rs: r.requests[g.ns], left: graceLeft, right: graceRight, tmin: -8, tmax: graceMax + 4}, top)
		}
	}
	w("</svg>\n")
	return b.String()
}

func drawPanel(b *strings.Builder, p panel, top float64) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	g := p.g
	lane := map[string]int{}
	for i, u := range g.users {
		lane[u] = i
	}
	laneY := func(i int) float64 { return top + 8 + float64(i)*laneHeight }
	w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="#fafafa" stroke="#ddd"/>`+"\n", p.left, top+8, p.right-p.left, 3*laneHeight)
	for i, u := range g.users {
		name := u[strings.LastIndex(u, "-")+1:]
		if u == g.old.user {
			name += " (stopped)"
		}
		w(`<text x="%.1f" y="%.1f" text-anchor="end" fill="#333">%s</text>`+"\n", p.left-4, laneY(i)+laneHeight/2+4, name)
	}
	// Holdings.
	hs, _ := holdings(g, p.rs)
	end := g.cancelAt.Add(time.Duration(p.tmax * float64(time.Second)))
	for _, h := range hs {
		i, ok := lane[h.user]
		if !ok {
			continue
		}
		to := h.to
		if h.end == "" {
			to = end
		}
		y := laneY(i) + 3
		from := p.x(p.rel(h.from))
		split := to
		if h.user == g.old.user && to.After(g.cancelAt) {
			split = g.cancelAt
		}
		if x1 := p.x(p.rel(split)); x1 > from {
			w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s" opacity="0.45"/>`+"\n", from, y, x1-from, laneHeight-6, laneColors[i%len(laneColors)])
		}
		if split.Before(to) {
			x0, x1 := p.x(p.rel(split)), p.x(p.rel(to))
			if x1 > x0 {
				w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="url(#hatch)" stroke="#999" stroke-width="0.5"/>`+"\n", x0, y, x1-x0, laneHeight-6)
			}
		}
	}
	// Open watches: a thin line in the lane while the stream lasts.
	for _, r := range p.rs {
		i, ok := lane[r.user]
		if !ok || r.verb != "watch" {
			continue
		}
		from, to := p.rel(r.at), p.tmax
		if !r.end.IsZero() {
			to = p.rel(r.end)
		}
		if to < p.tmin || from > p.tmax {
			continue
		}
		y := laneY(i) + laneHeight - 4
		w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#7f7f7f" stroke-width="1.5"/>`+"\n", p.x(from), y, p.x(to), y)
	}
	// Requests.
	for _, r := range p.rs {
		t := p.rel(r.at)
		i, ok := lane[r.user]
		if !ok || t < p.tmin || t > p.tmax {
			continue
		}
		x, y := p.x(t), laneY(i)+laneHeight/2
		switch {
		case r.write():
			if r.ok() {
				w("%s\n", square(x, y, "#222", true))
			} else {
				w("%s\n", square(x, y, "#d62728", false))
			}
		case r.read():
			w("%s\n", circle(x, y))
		case r.verb == "watch":
			w("%s\n", triangle(x, y))
		}
	}
	// The stop and the takeover.
	y0, y1 := top+4, top+12+3*laneHeight
	w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-width="1.5"/>`+"\n", p.x(0), y0, p.x(0), y1)
	tx := p.x(g.takeover().Seconds())
	w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#2ca02c" stroke-width="1.5" stroke-dasharray="4,3"/>`+"\n", tx, y0, tx, y1)
	w(`<text x="%.1f" y="%.1f" fill="#2ca02c">%s leads after %s</text>`+"\n", math.Min(tx+4, p.right-150), y0+2,
		g.new.user[strings.LastIndex(g.new.user, "-")+1:], dur(g.takeover()))
	// Axis.
	step := niceStep(p.tmax - p.tmin)
	ay := top + 8 + 3*laneHeight
	for t := math.Ceil(p.tmin/step) * step; t <= p.tmax; t += step {
		if t == 0 {
			t = 0 // not -0
		}
		x := p.x(t)
		w(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, x, ay, x, ay+4)
		w(`<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555" font-size="10">%g</text>`+"\n", x, ay+14, t)
	}
}

func niceStep(span float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 15, 20, 30, 60} {
		if span/s <= 12 {
			return s
		}
	}
	return 120
}

func square(x, y float64, color string, filled bool) string {
	if filled {
		return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="6" height="6" fill="%s"/>`, x-3, y-3, color)
	}
	return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="6" height="6" fill="none" stroke="%s" stroke-width="1.2"/>`, x-3, y-3, color)
}

func circle(x, y float64) string {
	return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="3" fill="none" stroke="#1f3b73" stroke-width="1.2"/>`, x, y)
}

func triangle(x, y float64) string {
	return fmt.Sprintf(`<path d="M%.1f %.1f l4 7 h-8 z" fill="#7f7f7f"/>`, x, y-4)
}
