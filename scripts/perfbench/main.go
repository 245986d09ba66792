// Command perfbench measures dirtywork bench: the harness cost of a case
// (staging, sandbox start, export, acceptance: everything but the model's
// time) with a scripted model answering at once, and how a sweep scales
// with --parallel against scripted servers that take a while to answer.
// It builds the binary it measures and needs a docker engine with the
// worker image.
//
//	go run ./scripts/perfbench -scenario harness -cases 10
//	go run ./scripts/perfbench -scenario parallel
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/bench"
	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

func main() {
	scenario := flag.String("scenario", "harness", "harness (per-case cost, model instant) or parallel (16 cases, 1 s a reply, parallel 1, 4 and 8)")
	cases := flag.Int("cases", 10, "cases of the harness scenario")
	delay := flag.Duration("model-delay", 0, "how long each of the harness scenario's four replies takes (subtracted from the case's time)")
	image := flag.String("image", "dirtywork-worker:dev", "worker image")
	bin := flag.String("binary", "", "dirtywork binary to measure (default: build one)")
	keep := flag.Bool("keep", false, "keep the sweeps' results, run dirs and transcripts (the path is printed)")
	flag.Parse()
	if err := run(*scenario, *cases, *delay, *image, *bin, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "perfbench:", err)
		os.Exit(1)
	}
}

func run(scenario string, cases int, delay time.Duration, image, bin string, keep bool) error {
	work, err := os.MkdirTemp("", "perfbench-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("kept:", work)
	} else {
		defer func() { _ = os.RemoveAll(work) }()
	}
	if bin == "" {
		bin = filepath.Join(work, "dirtywork")
		build := exec.Command("go", "build", "-o", bin, "./cmd/dirtywork")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %w\n%s", err, out)
		}
	}
	solution, err := os.ReadFile("bench/repos/py-windows/solution/windows.py")
	if err != nil {
		return err
	}
	switch scenario {
	case "harness":
		srv, base, err := serve(solution, delay)
		if err != nil {
			return err
		}
		rows, wall, err := sweep(bin, work, image, []string{"solver=" + base + "#1"}, cases, 1)
		if err != nil {
			return err
		}
		_ = srv
		var costs []float64
		for _, r := range rows {
			costs = append(costs, caseSeconds(r)-4*delay.Seconds())
		}
		slices.Sort(costs)
		fmt.Printf("harness cost per case (model %s a reply, four replies), %d cases, sweep %.1f s: median %.2f s, p95 %.2f s, min %.2f s, max %.2f s\n",
			delay, len(costs), wall.Seconds(), pct(costs, 50), pct(costs, 95), costs[0], costs[len(costs)-1])
		printSplit(rows)
	case "parallel":
		delay := time.Second
		srvA, baseA, err := serve(solution, delay)
		if err != nil {
			return err
		}
		srvB, baseB, err := serve(solution, delay)
		if err != nil {
			return err
		}
		busy0, busyErr := busyCPUSeconds()
		_, w1, err := sweep(bin, work, image, []string{"solver=" + baseA + "#4"}, 16, 1)
		if err != nil {
			return err
		}
		fmt.Printf("16 cases, 4 replies of 1 s each: --parallel 1: %.1f s\n", w1.Seconds())
		// The machine's ceiling: the sweep's work, spread over every CPU,
		// cannot take less than its CPU time divided by their number.
		if busy1, err := busyCPUSeconds(); busyErr == nil && err == nil {
			cpus := runtime.NumCPU()
			floor := (busy1 - busy0) / float64(cpus)
			fmt.Printf("CPU ceiling: the --parallel 1 sweep kept the machine's CPUs busy %.1f s in all; on %d CPUs no sweep of it takes under %.1f s, a speed-up of at most %.2fx\n",
				busy1-busy0, cpus, floor, w1.Seconds()/floor)
		}
		_, w4, err := sweep(bin, work, image, []string{"solver=" + baseA + "#4"}, 16, 4)
		if err != nil {
			return err
		}
		fmt.Printf("--parallel 4, one server of 4 slots: %.1f s (%.2fx); most in flight on it: %d\n", w4.Seconds(), w1.Seconds()/w4.Seconds(), srvA.MaxInFlight())
		_, w8, err := sweep(bin, work, image, []string{"solver=" + baseA + "#4", "solver=" + baseB + "#4"}, 8, 8)
		if err != nil {
			return err
		}
		fmt.Printf("--parallel 8, two servers of 4 slots: %.1f s (%.2fx); most in flight: %d and %d\n", w8.Seconds(), w1.Seconds()/w8.Seconds(), srvA.MaxInFlight(), srvB.MaxInFlight())
	default:
		return fmt.Errorf("unknown scenario %q", scenario)
	}
	return nil
}

// serve starts a scripted server whose model solves py-windows in four
// replies, each taking delay.
func serve(solution []byte, delay time.Duration) (*scripted.Server, string, error) {
	call := func(name string, args map[string]string) scripted.ToolCall {
		data, _ := json.Marshal(args)
		return scripted.ToolCall{Name: name, Arguments: data}
	}
	done := "fixed"
	ms := int(delay / time.Millisecond)
	srv := scripted.NewMulti(scripted.Script{Model: "solver", Turns: []scripted.Turn{
		{DelayMS: ms, ToolCalls: []scripted.ToolCall{call("list_dir", map[string]string{})}},
		{DelayMS: ms, ToolCalls: []scripted.ToolCall{call("read_file", map[string]string{"path": "windows.py"})}},
		{DelayMS: ms, ToolCalls: []scripted.ToolCall{call("write_file", map[string]string{"path": "windows.py", "content": string(solution)})}},
		{DelayMS: ms, Finish: &done},
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	go func() { _ = (&http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}).Serve(ln) }()
	return srv, "http://" + ln.Addr().String() + "/v1", nil
}

// sweep runs one bench sweep of py-windows and returns its rows and wall
// time.
func sweep(bin, work, image string, models []string, repeats, parallel int) ([]bench.Row, time.Duration, error) {
	out := filepath.Join(work, fmt.Sprintf("sweep-%d.jsonl", time.Now().UnixNano()))
	cmd := exec.Command(bin, "bench", "--models", strings.Join(models, ","), "--tasks", "py-windows",
		"--repeats", fmt.Sprint(repeats), "--parallel", fmt.Sprint(parallel), "--out", out,
		"--image", image, "--context-window", "32768")
	cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+filepath.Join(work, "home"))
	start := time.Now()
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, 0, fmt.Errorf("bench: %w\n%s", err, msg)
	}
	wall := time.Since(start)
	res, err := bench.ReadResults(out)
	if err != nil {
		return nil, 0, err
	}
	for _, r := range res.Rows {
		if r.Acceptance != bench.AcceptancePass {
			return nil, 0, fmt.Errorf("case %d: %s / %s", r.Repeat, r.Status, r.Acceptance)
		}
	}
	return res.Rows, wall, nil
}

// caseSeconds is a case's time from staging to the acceptance verdict.
func caseSeconds(r bench.Row) float64 {
	s := 0.0
	if r.WallS != nil {
		s += float64(*r.WallS)
	}
	if t := r.Time; t != nil {
		for _, p := range []*float64{t.StagingS, t.AcceptanceS} {
			if p != nil {
				s += *p
			}
		}
	}
	return s
}

// printSplit prints the median of each part of a case's time.
func printSplit(rows []bench.Row) {
	parts := map[string][]float64{}
	for _, r := range rows {
		if t := r.Time; t != nil {
			for name, p := range map[string]*float64{
				"staging": t.StagingS, "sandbox start": t.SandboxStartS, "model (prefill+decode)": sum(t.PrefillS, t.DecodeS),
				"tools": t.ToolsS, "export": t.ExportS, "acceptance": t.AcceptanceS,
			} {
				if p != nil {
					parts[name] = append(parts[name], *p)
				}
			}
		}
	}
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v := parts[n]
		slices.Sort(v)
		fmt.Printf("  %-24s median %.3f s\n", n, pct(v, 50))
	}
}

func sum(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	s := *a + *b
	return &s
}

// pct is the p-th percentile of sorted v (nearest rank).
func pct(v []float64, p int) float64 {
	i := (p*len(v) + 99) / 100
	return v[max(0, min(len(v)-1, i-1))]
}

// busyCPUSeconds is how long the machine's CPUs have been busy since it
// started, in CPU-seconds, everything but idle and iowait (/proc/stat's
// first line; Linux only).
func busyCPUSeconds() (float64, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	busy := 0.0
	for i, v := range f[1:] {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		if i == 3 || i == 4 || i >= 7 { // idle, iowait; guest times are in user already
			continue
		}
		busy += n
	}
	return busy / 100, nil // USER_HZ is 100 on every Linux dirtywork runs on
}
