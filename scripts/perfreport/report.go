package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A target is what a figure must come to: at most (or at least) Value, in
// the figure's unit, and where that target was set.
type target struct {
	AtLeast bool
	Value   float64
	Source  string
}

// met reports whether v meets t.
func (t target) met(v float64) bool {
	if t.AtLeast {
		return v >= t.Value
	}
	return v <= t.Value
}

// A row of the report: the figure under Key, labelled.
type row struct {
	Section, Label, Key string
	Target              *target
}

// A floor is the measured figure under Key, and what it is.
type floor struct {
	Key, What string
}

// cpuCeiling bounds every speed-up of a sweep on the machine.
var cpuCeiling = floor{"bench/parallel/ceiling", "the serial sweep's CPU time spread over every CPU"}

// floors are the figures, measured in the same run, that the figure under
// a row's key cannot beat on the machine: a missed target its floor
// misses too is unreachable here.
var floors = map[string]floor{
	"bench/parallel/4":    cpuCeiling,
	"bench/parallel/8":    cpuCeiling,
	"go/BenchmarkGrep20k": {"go/BenchmarkReadFloor20k", "BenchmarkReadFloor20k: only listing, opening, reading and closing the 20,000 files"},
	"go/BenchmarkExtract20k": {
		"go/BenchmarkExtract20k/floor",
		"only making the 200 directories and creating, writing and closing the 20,000 files, alternately with each extraction on the same disk",
	},
}

// floorNote says what a missed row's floor shows: "" without a floor or
// its figure, else whether it makes the target unreachable here.
func floorNote(rw row, byKey map[string]figure) string {
	fl, ok := floors[rw.Key]
	if !ok || rw.Target == nil {
		return ""
	}
	f, ok := byKey[fl.Key]
	if !ok {
		return ""
	}
	bound := "floor"
	if rw.Target.AtLeast {
		bound = "ceiling"
	}
	if rw.Target.met(f.Value) {
		return fmt.Sprintf("; %s %s (%s) meets the target", bound, format(f.Value, f.Unit), fl.What)
	}
	return fmt.Sprintf("; unreachable here: %s %s (%s)", bound, format(f.Value, f.Unit), fl.What)
}

// original is the Python dirtywork 0.9.1's figures for the reference
// scenario (a model answering at once, medians of 5 runs), from the
// scenario's README: whole run, to the first model request, harness time
// per tool call and after the last reply, in ms.
var original = map[string][4]float64{
	"none/200":     {530, 250, 3.4, 70},
	"none/20000":   {7900, 6000, 97, 400},
	"docker/200":   {12100, 2600, 338, 3350},
	"docker/20000": {37000, 7600, 340, 23700},
}

const origSource = "the original's figure (shared/perf)"

func le(v float64, source string) *target { return &target{Value: v, Source: source} }

// rows are every row the report has, in order; a figure not measured in
// this report (a quick one) shows as such.
func rows() []row {
	var rs []row
	for _, sandbox := range []string{"none", "docker"} {
		for _, files := range []int{200, 20000} {
			for _, delay := range []int{0, 500} {
				o := original[fmt.Sprintf("%s/%d", sandbox, files)]
				p := perfPrefix(sandbox, files, delay)
				sec := fmt.Sprintf("std20, --sandbox %s, %s files, model %s", sandbox, thousands(files), delayWord(delay))
				var whole *target
				if delay == 0 {
					whole = le(o[0], origSource)
				}
				rs = append(rs,
					row{sec, "whole run", p + "/whole", whole},
					row{sec, "harness (whole run − model time)", p + "/harness", le(o[0], origSource+": its whole run with the model answering at once")},
					row{sec, "to the first model request", p + "/first", le(o[1], origSource)},
					row{sec, "harness per tool call, median", p + "/tool/all", le(o[2], origSource)},
					row{sec, "after the last reply", p + "/after", le(o[3], origSource)},
				)
			}
		}
	}
	const bench = "bench harness (scripts/perfbench)"
	rs = append(rs,
		row{bench, "harness cost per case, median", "bench/harness/median", le(1.5, "issue 16")},
		row{bench, "harness cost per case, p95", "bench/harness/p95", le(2.5, "issue 16")},
		row{bench, "--parallel 4 speed-up", "bench/parallel/4", &target{AtLeast: true, Value: 3.2, Source: "issue 16"}},
		row{bench, "--parallel 8 speed-up", "bench/parallel/8", &target{AtLeast: true, Value: 5, Source: "issue 16"}},
		row{bench, "CPU ceiling of any speed-up: the serial sweep's CPU time over the machine's CPUs", "bench/parallel/ceiling", nil},
	)
	const tools = "tool calls (Go benchmarks, per op)"
	rs = append(rs,
		row{tools, "host: read_file + edit_file + list_dir (BenchmarkFileTools)", "go/BenchmarkFileTools", le(3*3.4, origSource+": 3 × 3.4 ms a host tool call")},
		row{tools, "host: bash true (BenchmarkBashTrue)", "go/BenchmarkBashTrue", le(37, origSource+": host bash")},
		row{tools, "host jail tool server: bash true (BenchmarkToolServerBashTrue)", "go/BenchmarkToolServerBashTrue", le(37, origSource+": host bash")},
		row{tools, "docker: read_file (BenchmarkLiveToolCalls/read_file)", "go/BenchmarkLiveToolCalls/read_file", le(171, origSource+": docker read_file")},
		row{tools, "docker: bash true (BenchmarkLiveToolCalls/bash_true)", "go/BenchmarkLiveToolCalls/bash_true", le(561, origSource+": docker bash")},
		row{tools, "tool server process: read_file round trip (BenchmarkReadFileRoundTrip/process)", "go/BenchmarkReadFileRoundTrip/process", nil},
		row{tools, "grep over 20,000 files (BenchmarkGrep20k)", "go/BenchmarkGrep20k", le(97, origSource+": a host tool call on 20,000 files")},
		row{tools, "read floor: list, open, read and close 20,000 files (BenchmarkReadFloor20k)", "go/BenchmarkReadFloor20k", nil},
		row{tools, "tree measure, 20,000 files (BenchmarkMeasure20k)", "go/BenchmarkMeasure20k", le(97, origSource+": a host tool call on 20,000 files")},
		row{tools, "one turn's harness cost (BenchmarkTurnOverhead)", "go/BenchmarkTurnOverhead", nil},
	)
	const start = "sandbox start (Go benchmarks, per op)"
	rs = append(rs,
		row{start, "host jail start (BenchmarkStart)", "go/BenchmarkStart", le(250, origSource+": host, to the first model request")},
		row{start, "host: open to the first tool call answered (BenchmarkOpenToReady)", "go/BenchmarkOpenToReady", le(250, origSource+": host, to the first model request")},
		row{start, "host jail tool server start (BenchmarkToolServerStart)", "go/BenchmarkToolServerStart", le(250, origSource+": host, to the first model request")},
		row{start, "docker: container sandbox opened and closed, 200 files (BenchmarkLiveOpenClose)", "go/BenchmarkLiveOpenClose", le(2600+3350, origSource+": docker 200, to the first request plus after the last reply")},
	)
	const export = "export by tree size (Go benchmarks, per op)"
	rs = append(rs,
		row{export, "extract 20,000 files into a worktree (BenchmarkExtract20k)", "go/BenchmarkExtract20k", le(7000, origSource+": its extraction of 20,000 files")},
		row{export, "write floor: make, write and close the same 20,000 files, beside each extraction (BenchmarkExtract20k floor-ns/op)", "go/BenchmarkExtract20k/floor", nil},
		row{export, "validate a 20,000-file stream (BenchmarkValidate20k)", "go/BenchmarkValidate20k", le(7000, origSource+": its validator on 20,000 files")},
		row{export, "sync 20,000 unchanged files (BenchmarkSync20kUnchanged)", "go/BenchmarkSync20kUnchanged", le(7000, origSource+": its re-hash of 20,000 files")},
		row{export, "sync 100,000 files, all changed (BenchmarkSync100kChanged)", "go/BenchmarkSync100kChanged", nil},
		row{export, "diff of a 20,000-file tree (BenchmarkDiffTree20k)", "go/BenchmarkDiffTree20k", nil},
		row{export, "seal of 20,000 files, every file read (BenchmarkSeal20k)", "go/BenchmarkSeal20k", nil},
	)
	const tui = "mission control (tui/perftui)"
	rs = append(rs,
		row{tui, "first frame, 10,000 runs in the root", "tui/first-frame", le(300, "issue 17")},
		row{tui, "key to redraw, four live runs at 200 events/s, median", "tui/key/p50", le(16, "issue 17")},
		row{tui, "key to redraw, p95", "tui/key/p95", le(50, "tui/perftui")},
		row{tui, "event to screen, p95", "tui/event/p95", le(100, "tui/perftui")},
		row{tui, "review open: first diff line on screen (50 files)", "tui/review-open", le(150, "issue 17")},
		row{tui, "a 10,000-line diff on screen", "tui/big-diff", le(300, "tui/perftui")},
		row{tui, "bench view over 5,000 rows", "tui/bench-view", le(300, "tui/perftui")},
		row{tui, "memory: Go heap, four followed transcripts", "tui/heap", le(150, "tui/perftui")},
	)
	return rs
}

func perfPrefix(sandbox string, files, delayMS int) string {
	return fmt.Sprintf("std20/%s/%d/%dms", sandbox, files, delayMS)
}

func delayWord(ms int) string {
	if ms == 0 {
		return "answering at once"
	}
	return fmt.Sprintf("taking %.1f s a turn", float64(ms)/1000)
}

// thousands writes n with a comma every three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// machine is where the figures were measured.
type machine struct {
	CPU, Memory, Kernel, Go, Docker, Date string
	CPUs                                  int
}

// report is what docs/performance.md is written from.
type report struct {
	Machine machine
	Quick   bool
	// Commands are the harness command lines that were run.
	Commands []string
	Figures  []figure
}

// format renders a value in its unit.
func format(v float64, unit string) string {
	switch unit {
	case "ms":
		if v >= 1000 {
			return fmt.Sprintf("%.2f s", v/1000)
		}
		if v < 1 {
			return fmt.Sprintf("%.3f ms", v)
		}
		return fmt.Sprintf("%.1f ms", v)
	case "x":
		return fmt.Sprintf("%.2fx", v)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

// writeMarkdown writes docs/performance.md.
func writeMarkdown(w io.Writer, r report) error {
	byKey := map[string]figure{}
	for _, f := range r.Figures {
		byKey[f.Key] = f
	}
	var b strings.Builder
	b.WriteString("# Performance\n\n")
	b.WriteString("Written by `task perf` (`go run ./scripts/perfreport`), which runs the project's performance\n" +
		"harnesses and puts each figure beside its target. Regenerate it rather than editing it.\n\n")
	if r.Quick {
		b.WriteString("> **Quick run (`-quick`) on a busy shared machine.** Fewer runs, the 200-file repository only,\n" +
			"> benchmarks run once each, reduced mission-control loads: these figures show that the\n" +
			"> harnesses work end to end, not how fast dirtywork is. The real figures come from a full\n" +
			"> `task perf` on a quiet machine.\n\n")
	}
	m := r.Machine
	b.WriteString("## Machine\n\n| | |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| CPU | %s, %d CPUs |\n| memory | %s |\n| kernel | %s |\n| Go | %s |\n| docker | %s |\n| date | %s |\n\n",
		m.CPU, m.CPUs, m.Memory, m.Kernel, m.Go, m.Docker, m.Date)
	b.WriteString("## Figures\n\n")
	section := ""
	met, missed, absent := 0, 0, 0
	for _, rw := range rows() {
		if rw.Section != section {
			section = rw.Section
			fmt.Fprintf(&b, "\n### %s\n\n| figure | measured | target | |\n| --- | --- | --- | --- |\n", section)
		}
		f, ok := byKey[rw.Key]
		value, tgt, verdict := "not measured", "—", ""
		if ok {
			value = format(f.Value, f.Unit)
		}
		if rw.Target != nil {
			unit := "ms"
			if ok {
				unit = f.Unit
			} else if strings.HasPrefix(rw.Key, "bench/harness") {
				unit = "s"
			} else if strings.HasPrefix(rw.Key, "bench/parallel") {
				unit = "x"
			} else if rw.Key == "tui/heap" {
				unit = "MB"
			}
			op := "≤"
			if rw.Target.AtLeast {
				op = "≥"
			}
			tgt = fmt.Sprintf("%s %s (%s)", op, format(rw.Target.Value, unit), rw.Target.Source)
			switch {
			case !ok:
				absent++
			case rw.Target.met(f.Value):
				verdict = "met"
				met++
			default:
				verdict = "**missed**" + floorNote(rw, byKey)
				missed++
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", rw.Label, value, tgt, verdict)
	}
	fmt.Fprintf(&b, "\n%d targets met, %d missed, %d not measured in this run.\n", met, missed, absent)
	if len(r.Commands) > 0 {
		b.WriteString("\n## What ran\n\n```sh\n")
		for _, c := range r.Commands {
			b.WriteString(c + "\n")
		}
		b.WriteString("```\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
