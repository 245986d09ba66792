package runs

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

// benchRecord is a run.json the size of a real one.
func benchRecord(slug, repo string, i int) map[string]any {
	return map[string]any{
		"status": "completed", "repo": repo, "worktree": filepath.Join(repo, ".worktrees", "dw-"+slug), "branch": "dirtywork/" + slug,
		"base_commit": strings.Repeat("a", 40), "base_ref": "HEAD", "task": strings.Repeat("make the export command accept --json ", 8),
		"model": "qwen/qwen3-coder-next", "provider": "openai", "context_window": 65536, "context_window_source": "provider:openai:server",
		"sandbox": "docker", "container": "dw-" + slug, "volume": "dw-" + slug + "-work", "image": "dirtywork-worker:dev",
		"started": "2026-01-02T03:04:05.000000+00:00", "ended": "2026-01-02T03:14:05.000000+00:00", "turns": 20, "trimmed_turns": 1,
		"timeouts": 0, "files_changed": []string{"a.go", "b.go", "c.go"}, "diff_stat": strings.Repeat(" a.go | 3 ++-\n", 3),
		"last_tool_result":    map[string]any{"tool": "finish", "args": "{}", "result": strings.Repeat("done ", 100)},
		"last_assistant_text": strings.Repeat("I changed the flag. ", 20), "usage": map[string]any{"prompt_tokens": 12345, "completion_tokens": 678},
		"verify":   map[string]any{"command": "go test ./...", "exit_code": 0, "output_tail": strings.Repeat("ok\n", 50), "rounds": 1, "passed": true},
		"host_pid": 1000 + i, "schema_version": 2,
	}
}

// BenchmarkListJSON10000 is `runs list --json` over 10,000 runs: the
// records, liveness, one worktree list, one daemon listing, the rows.
func BenchmarkListJSON10000(b *testing.B) {
	e := newEnv(b)
	repo := newRepo(b)
	for i := range 10000 {
		slug := fmt.Sprintf("run-%05d", i)
		e.addRun(slug, benchRecord(slug, repo, i))
		if i%100 == 0 {
			e.docker.addContainer("dw-"+slug, "exited", slug, repo)
		}
	}
	b.ResetTimer()
	cpu := cpuMeter(b)
	for b.Loop() {
		list, err := e.store.List(b.Context(), ListOptions{Leftovers: true})
		if err != nil || len(list) != 10000 {
			b.Fatal(err, len(list))
		}
		rows := make([]ListRow, len(list))
		for i, r := range list {
			rows[i] = Row(r)
		}
		if err := json.NewEncoder(io.Discard).Encode(rows); err != nil {
			b.Fatal(err)
		}
	}
	cpu()
}

// cpuMeter reports the CPU time (user and system, this process and its
// children) per iteration, which a loaded machine does not inflate the
// way it inflates wall time.
func cpuMeter(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op") }
}

func cpuTime() int64 {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	n := int64(0)
	for _, r := range []syscall.Rusage{self, kids} {
		n += syscall.TimevalToNsec(r.Utime) + syscall.TimevalToNsec(r.Stime)
	}
	return n
}

// BenchmarkShow is `runs show`: the record, a 300-event transcript, the
// summary, run.json and the timeline.
func BenchmarkShow(b *testing.B) {
	e := newEnv(b)
	repo := newRepo(b)
	dir := e.addRun("shown", benchRecord("shown", repo, 0))
	tw, err := transcript.Create(filepath.Join(dir, transcript.TranscriptName))
	if err != nil {
		b.Fatal(err)
	}
	_ = tw.Write(transcript.RunStart{Task: "t", Model: "m"})
	for i := range 100 {
		_ = tw.Write(transcript.Assistant{Text: strings.Repeat("thinking ", 50), ToolCalls: []transcript.ToolCallRecord{{Name: "bash", Arguments: `{"cmd":"go test"}`}}})
		_ = tw.Write(transcript.ToolResult{Tool: "bash", Args: "{}", Result: strings.Repeat("output line\n", 150)})
		_ = tw.Write(transcript.ModelRequest{Turn: i + 1, EstPromptTokens: 1000})
	}
	_ = tw.Write(transcript.RunEnd{Status: "completed", Turns: 100})
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu := cpuMeter(b)
	defer cpu()
	for b.Loop() {
		rep, err := e.store.Report("shown")
		if err != nil {
			b.Fatal(err)
		}
		var sb strings.Builder
		for _, kv := range rep.Summary() {
			sb.WriteString(kv.Key + ": " + kv.Value + "\n")
		}
		sb.WriteString(rep.RecordJSON())
		for _, l := range rep.Timeline() {
			sb.WriteString(l)
		}
	}
}

// BenchmarkAccept1000Files is `runs accept` of a change of 1,000 files
// (500 modified, 500 new) in a repository of 2,000.
func BenchmarkAccept1000Files(b *testing.B) {
	e := newEnv(b)
	repo := newRepo(b)
	for i := range 2000 {
		writeFile(b, filepath.Join(repo, "src", fmt.Sprintf("d%02d", i%40), fmt.Sprintf("f%04d.go", i)), fmt.Sprintf("package p\n// %d\n", i))
	}
	git(b, repo, "add", "-A")
	git(b, repo, "commit", "-q", "-m", "tree")
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		b.StopTimer()
		slug := fmt.Sprintf("acc-%d", n)
		wt := e.addLaneRun(repo, slug, nil)
		for i := range 500 {
			writeFile(b, filepath.Join(wt, "src", fmt.Sprintf("d%02d", i%40), fmt.Sprintf("f%04d.go", i)), "package p\n// changed\n")
			writeFile(b, filepath.Join(wt, "new", fmt.Sprintf("d%02d", i%20), fmt.Sprintf("n%04d.go", i)), "package n\n")
		}
		b.StartTimer()
		res, err := e.store.Accept(b.Context(), slug, AcceptOptions{})
		if err != nil || len(res.Files) != 1000 {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkDiffLargeTree is Diff (what review and accept start with) of a
// 10-file change in a repository of 20,000 files.
func BenchmarkDiffLargeTree(b *testing.B) {
	e := newEnv(b)
	repo := newRepo(b)
	for i := range 20000 {
		writeFile(b, filepath.Join(repo, "src", fmt.Sprintf("d%03d", i%200), fmt.Sprintf("f%05d.go", i)), fmt.Sprintf("package p\n// %d\n", i))
	}
	git(b, repo, "add", "-A")
	git(b, repo, "commit", "-q", "-m", "tree")
	wt := e.addLaneRun(repo, "big", nil)
	for i := range 10 {
		writeFile(b, filepath.Join(wt, "src", fmt.Sprintf("d%03d", i), fmt.Sprintf("f%05d.go", i)), "package p\n// changed\n")
	}
	b.ResetTimer()
	for b.Loop() {
		d, err := e.store.Diff(b.Context(), "big", DiffOptions{})
		if err != nil || len(d.Files) != 10 {
			b.Fatal(err, d)
		}
	}
}
