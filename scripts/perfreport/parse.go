package main

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A figure is one measured number, named by a key the targets refer to.
type figure struct {
	Key   string
	Value float64
	Unit  string // "ms", "s", "MB", "x"
}

// ms turns a duration into milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// perfLine matches scripts/perf's "  label   12.3 ms" lines.
var perfLine = regexp.MustCompile(`^\s+(whole run|model time|harness \(whole-model\)|to first model request|after the last reply)\s+([0-9.]+) ms`)

// perfTool matches one "name 12.3 ms" part of "harness per tool call".
var perfTool = regexp.MustCompile(`([a-z_?]+) ([0-9.]+) ms`)

// perfKeys are the keys scripts/perf's labels become.
var perfKeys = map[string]string{
	"whole run": "whole", "model time": "model", "harness (whole-model)": "harness",
	"to first model request": "first", "after the last reply": "after",
}

// parsePerf reads scripts/perf's report; keys are prefix+"/"+figure
// (whole, model, harness, first, after, tool/<name>).
func parsePerf(prefix, out string) ([]figure, error) {
	var figs []figure
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := perfLine.FindStringSubmatch(line); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return nil, err
			}
			figs = append(figs, figure{Key: prefix + "/" + perfKeys[m[1]], Value: v, Unit: "ms"})
			continue
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "harness per tool call"); ok {
			for _, m := range perfTool.FindAllStringSubmatch(rest, -1) {
				v, err := strconv.ParseFloat(m[2], 64)
				if err != nil {
					return nil, err
				}
				figs = append(figs, figure{Key: prefix + "/tool/" + m[1], Value: v, Unit: "ms"})
			}
		}
	}
	if len(figs) == 0 {
		return nil, fmt.Errorf("no figures in scripts/perf's output:\n%s", out)
	}
	return figs, nil
}

var (
	harnessLine  = regexp.MustCompile(`harness cost per case .*: median ([0-9.]+) s, p95 ([0-9.]+) s`)
	parallelLine = regexp.MustCompile(`^--parallel (\d+),.*\(([0-9.]+)x\)`)
	ceilingLine  = regexp.MustCompile(`^CPU ceiling: .* a speed-up of at most ([0-9.]+)x`)
)

// parsePerfbench reads scripts/perfbench: "bench/harness/median",
// "bench/harness/p95" (s), "bench/parallel/<n>" (speed-up) and
// "bench/parallel/ceiling" (the most any speed-up can be on the machine).
func parsePerfbench(out string) ([]figure, error) {
	var figs []figure
	for _, line := range strings.Split(out, "\n") {
		if m := harnessLine.FindStringSubmatch(line); m != nil {
			med, err1 := strconv.ParseFloat(m[1], 64)
			p95, err2 := strconv.ParseFloat(m[2], 64)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("bad harness line %q", line)
			}
			figs = append(figs, figure{Key: "bench/harness/median", Value: med, Unit: "s"}, figure{Key: "bench/harness/p95", Value: p95, Unit: "s"})
		}
		if m := parallelLine.FindStringSubmatch(line); m != nil {
			x, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return nil, err
			}
			figs = append(figs, figure{Key: "bench/parallel/" + m[1], Value: x, Unit: "x"})
		}
		if m := ceilingLine.FindStringSubmatch(line); m != nil {
			x, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				return nil, err
			}
			figs = append(figs, figure{Key: "bench/parallel/ceiling", Value: x, Unit: "x"})
		}
	}
	if len(figs) == 0 {
		return nil, fmt.Errorf("no figures in scripts/perfbench's output:\n%s", out)
	}
	return figs, nil
}

// tuiDurations are tui/perftui's single-duration lines and their keys.
var tuiDurations = map[string]string{
	"first frame with runs":        "tui/first-frame",
	"review on screen":             "tui/big-diff",
	"first diff line on screen":    "tui/review-open",
	"key to the tables on screen":  "tui/bench-view",
	"merge forecast on screen":     "tui/forecast",
	"empty frame":                  "tui/empty-frame",
	"syntax colour of the screen":  "tui/syntax-colour",
	"enter handled (Update)":       "tui/enter-update",
	"of which reading and parsing": "tui/bench-parse",
}

var (
	tuiLabel = regexp.MustCompile(`^\s+([^:]+):\s+(.*)$`)
	tuiPcts  = regexp.MustCompile(`^p50\s+(\S+)\s+p95\s+(\S+)\s+max\s+(\S+)`)
	tuiHeap  = regexp.MustCompile(`^([0-9.]+) MB`)
)

// parsePerfTUI reads tui/perftui's report.
func parsePerfTUI(out string) ([]figure, error) {
	var figs []figure
	for _, line := range strings.Split(out, "\n") {
		m := tuiLabel.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		label, rest := strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
		switch {
		case tuiDurations[label] != "":
			d, err := time.ParseDuration(strings.Fields(rest)[0])
			if err != nil {
				return nil, fmt.Errorf("perftui %s: %w", label, err)
			}
			figs = append(figs, figure{Key: tuiDurations[label], Value: ms(d), Unit: "ms"})
		case label == "event written -> drawn" || label == "key sent -> drawn":
			p := tuiPcts.FindStringSubmatch(rest)
			if p == nil {
				return nil, fmt.Errorf("perftui %s: %q", label, rest)
			}
			key := "tui/event"
			if strings.HasPrefix(label, "key") {
				key = "tui/key"
			}
			for i, name := range []string{"p50", "p95", "max"} {
				d, err := time.ParseDuration(p[i+1])
				if err != nil {
					return nil, fmt.Errorf("perftui %s: %w", label, err)
				}
				figs = append(figs, figure{Key: key + "/" + name, Value: ms(d), Unit: "ms"})
			}
		case label == "Go heap in use after GC":
			h := tuiHeap.FindStringSubmatch(rest)
			if h == nil {
				return nil, fmt.Errorf("perftui heap: %q", rest)
			}
			v, err := strconv.ParseFloat(h[1], 64)
			if err != nil {
				return nil, err
			}
			figs = append(figs, figure{Key: "tui/heap", Value: v, Unit: "MB"})
		}
	}
	if len(figs) == 0 {
		return nil, fmt.Errorf("no figures in tui/perftui's output:\n%s", out)
	}
	return figs, nil
}

// benchLine matches a Go benchmark result: name, -GOMAXPROCS, runs, ns/op.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

// floorMetric matches the floor a benchmark measured beside itself, on
// the same resource at the same time (b.ReportMetric "floor-ns/op").
var floorMetric = regexp.MustCompile(`\s([0-9.]+) floor-ns/op`)

// parseGoBench reads `go test -bench` output: "go/<BenchmarkName>" in ms,
// and a floor it reported as "go/<BenchmarkName>/floor".
func parseGoBench(out string) ([]figure, error) {
	var figs []figure
	for _, line := range strings.Split(out, "\n") {
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ns, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return nil, err
		}
		figs = append(figs, figure{Key: "go/" + m[1], Value: ns / 1e6, Unit: "ms"})
		if f := floorMetric.FindStringSubmatch(line); f != nil {
			ns, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return nil, err
			}
			figs = append(figs, figure{Key: "go/" + m[1] + "/floor", Value: ns / 1e6, Unit: "ms"})
		}
	}
	if len(figs) == 0 {
		return nil, fmt.Errorf("no benchmark results in:\n%s", out)
	}
	return figs, nil
}
