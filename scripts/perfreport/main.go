// Command perfreport runs dirtywork's performance harnesses and writes
// docs/performance.md: every figure beside its target and the machine it
// was measured on. The harnesses are scripts/perf (the reference 20-turn
// scenario), scripts/perfbench (bench's harness cost and --parallel),
// tui/perftui (mission control) and the Go benchmarks of the tool calls,
// the sandboxes' start and the export. It needs a docker engine with the
// worker image, takes a long while, and should run on a quiet machine.
//
//	go run ./scripts/perfreport            # the whole report (task perf)
//	go run ./scripts/perfreport -quick     # a smoke run: fewer runs, 200 files only
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func main() {
	quick := flag.Bool("quick", false, "a smoke run: one run a scenario, the 200-file repository only, benchmarks once, reduced mission-control loads")
	out := flag.String("out", "docs/performance.md", "where to write the report")
	image := flag.String("image", "dirtywork-worker:dev", "worker image for the docker figures")
	flag.Parse()
	if err := run(*quick, *out, *image); err != nil {
		fmt.Fprintln(os.Stderr, "perfreport:", err)
		os.Exit(1)
	}
}

// plan is what one report runs.
type plan struct {
	files                 []int
	perfRuns              map[int]int // by file count
	benchCases            int
	parallel              bool
	benchtime             string
	tuiArgs               []string
	sandboxes             []string
	delaysMS              []int
	perfbench, benchTests bool
}

func planFor(quick bool) plan {
	if quick {
		return plan{
			files: []int{200}, perfRuns: map[int]int{200: 1}, benchCases: 2, benchtime: "1x",
			tuiArgs:   []string{"-seconds", "3", "-events", "10000"},
			sandboxes: []string{"none", "docker"}, delaysMS: []int{0, 500}, perfbench: true, benchTests: true,
		}
	}
	return plan{
		files: []int{200, 20000}, perfRuns: map[int]int{200: 5, 20000: 3}, benchCases: 10, parallel: true, benchtime: "1s",
		sandboxes: []string{"none", "docker"}, delaysMS: []int{0, 500}, perfbench: true, benchTests: true,
	}
}

func run(quick bool, out, image string) error {
	p := planFor(quick)
	work, err := os.MkdirTemp("", "dirtywork-perfreport-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	bin := filepath.Join(work, "dirtywork")
	if _, err := runCmd(nil, "go", "build", "-trimpath", "-o", bin, "./cmd/dirtywork"); err != nil {
		return err
	}
	r := report{Machine: describeMachine(), Quick: quick}
	add := func(cmd []string, parse func(string) ([]figure, error)) error {
		r.Commands = append(r.Commands, strings.Join(cmd, " "))
		text, err := runCmd(os.Stderr, cmd[0], cmd[1:]...)
		if err != nil {
			return err
		}
		figs, err := parse(text)
		if err != nil {
			return err
		}
		r.Figures = append(r.Figures, figs...)
		return nil
	}
	fixtures := filepath.Join(work, "fixtures")
	for _, files := range p.files {
		for _, sandbox := range p.sandboxes {
			for _, delay := range p.delaysMS {
				cmd := []string{
					"go", "run", "./scripts/perf", "-binary", bin, "-fixture", fixtures,
					"-files", strconv.Itoa(files), "-runs", strconv.Itoa(p.perfRuns[files]),
					"-sandbox", sandbox, "-image", image, "-model-delay", fmt.Sprintf("%dms", delay),
				}
				prefix := perfPrefix(sandbox, files, delay)
				if err := add(cmd, func(s string) ([]figure, error) { return parsePerf(prefix, s) }); err != nil {
					return err
				}
			}
		}
	}
	if p.perfbench {
		if err := add([]string{"go", "run", "./scripts/perfbench", "-scenario", "harness", "-cases", strconv.Itoa(p.benchCases), "-binary", bin, "-image", image}, parsePerfbench); err != nil {
			return err
		}
		if p.parallel {
			if err := add([]string{"go", "run", "./scripts/perfbench", "-scenario", "parallel", "-binary", bin, "-image", image}, parsePerfbench); err != nil {
				return err
			}
		}
	}
	if p.benchTests {
		bench := []string{"go", "test", "-run", "^$", "-bench", ".", "-benchtime", p.benchtime, "-count", "1"}
		if err := add(append(bench, "./sandbox/host/...", "./sandbox/toolbox/", "./sandbox/export/", "./sandbox/fsops/", "./sandbox/seal/", "./engine/"), parseGoBench); err != nil {
			return err
		}
		if err := add(append(bench, "-tags", "docker", "./sandbox/docker/workspace/"), parseGoBench); err != nil {
			return err
		}
	}
	if err := add(append([]string{"go", "run", "./tui/perftui"}, p.tuiArgs...), parsePerfTUI); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := writeMarkdown(&b, r); err != nil {
		return err
	}
	return os.WriteFile(out, b.Bytes(), 0o644)
}

// runCmd runs a harness, copying its output to echo as it comes (so a
// long report shows progress), and returns what it printed on stdout.
func runCmd(echo io.Writer, name string, args ...string) (string, error) {
	fmt.Fprintf(os.Stderr, "perfreport: %s %s\n", name, strings.Join(args, " "))
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if echo != nil {
		cmd.Stdout = io.MultiWriter(&out, echo)
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), nil
}

// describeMachine says where the figures are measured.
func describeMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), Date: time.Now().UTC().Format("2006-01-02 15:04 UTC")}
	m.CPU = cpuModel(readFile("/proc/cpuinfo"))
	m.Memory = memTotal(readFile("/proc/meminfo"))
	m.Kernel = strings.TrimSpace(readFile("/proc/sys/kernel/osrelease"))
	if v, err := exec.Command("go", "version").Output(); err == nil {
		m.Go = strings.TrimPrefix(strings.TrimSpace(string(v)), "go version ")
	}
	m.Docker = "not reachable"
	if v, err := exec.Command("docker", "version", "--format", "{{.Server.Version}}").Output(); err == nil {
		m.Docker = "engine " + strings.TrimSpace(string(v))
	}
	for _, s := range []*string{&m.CPU, &m.Memory, &m.Kernel} {
		if *s == "" {
			*s = "unknown"
		}
	}
	return m
}

func readFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(data)
}

// cpuModel is /proc/cpuinfo's first "model name".
func cpuModel(cpuinfo string) string {
	for _, line := range strings.Split(cpuinfo, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// memTotal is /proc/meminfo's MemTotal in GiB.
func memTotal(meminfo string) string {
	for _, line := range strings.Split(meminfo, "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					return fmt.Sprintf("%.1f GiB", kb/(1<<20))
				}
			}
		}
	}
	return ""
}
