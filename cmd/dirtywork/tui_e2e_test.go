package main

// Real-terminal tests of mission control: the CLI runs in a tmux pane,
// keys go in with send-keys and the screen comes back with capture-pane.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// tmuxPane is one tmux server (its own socket) with one pane running the
// CLI.
type tmuxPane struct {
	t      *testing.T
	socket string
	dir    string
}

// startTUI runs the CLI with args in a w×h tmux pane, with env added to
// the (isolated) test environment.
func startTUI(t *testing.T, w, h int, env []string, args ...string) *tmuxPane {
	t.Helper()
	return startTUIWith(t, os.Args[0], w, h, env, args...)
}

// startTUIWith is startTUI with another binary (a real build, for the
// docker sandbox, which runs the binary as its tool server).
func startTUIWith(t *testing.T, exe string, w, h int, env []string, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is needed for the real-terminal tests (scripts/test-all installs it): %v", err)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	p := &tmuxPane{t: t, socket: "dwtest-" + hex.EncodeToString(b), dir: t.TempDir()}
	var sh strings.Builder
	sh.WriteString("#!/bin/sh\n")
	for _, kv := range append(os.Environ(), append([]string{testMainEnv + "=1", "TERM=xterm-256color"}, env...)...) {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || strings.ContainsAny(k, " ='\"") || k == "TMUX" || k == "TMUX_PANE" {
			continue
		}
		fmt.Fprintf(&sh, "export %s=%s\n", k, shellQuote(v))
	}
	quoted := []string{shellQuote(exe)}
	for _, a := range args {
		quoted = append(quoted, shellQuote(a))
	}
	// The exit line starts a line of its own: a program killed in raw
	// mode leaves the cursor anywhere and the terminal without its CR on
	// a newline, and a line wrapped at the edge would not be found.
	fmt.Fprintf(&sh, "%s 2>%s\ncode=$?\nprintf '\\r\\n[exited %%s]\\r\\n' \"$code\"\nsleep 600\n", strings.Join(quoted, " "), shellQuote(filepath.Join(p.dir, "stderr")))
	script := filepath.Join(p.dir, "run.sh")
	if err := writeExecutable(script, []byte(sh.String()), 0o700); err != nil {
		t.Fatal(err)
	}
	p.tmux("-f", "/dev/null", "new-session", "-d", "-s", "e2e", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), script)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last screen:\n%s", p.capture())
			if data, err := os.ReadFile(filepath.Join(p.dir, "stderr")); err == nil {
				t.Logf("stderr:\n%s", data)
			}
		}
		_ = exec.Command("tmux", "-L", p.socket, "kill-server").Run()
		// tmux leaves its socket file behind (in TMUX_TMPDIR, else /tmp,
		// then tmux-<uid>); a stale one is harmless, but they pile up.
		dir := os.Getenv("TMUX_TMPDIR")
		if dir == "" {
			dir = "/tmp"
		}
		_ = os.Remove(filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()), p.socket))
	})
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture is the pane's text as shown.
func (p *tmuxPane) capture() string {
	out, err := exec.Command("tmux", "-L", p.socket, "capture-pane", "-p", "-t", "e2e").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(capture failed: %v: %s)", err, out)
	}
	return string(out)
}

// keys sends tmux key names ("Enter", "Escape", "C-s", "a").
func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "e2e"}, keys...)...)
}

// typeText sends literal text.
func (p *tmuxPane) typeText(s string) {
	p.t.Helper()
	p.tmux("send-keys", "-t", "e2e", "-l", s)
}

// waitFor polls the screen until cond holds; it returns the screen and how
// long it took.
func (p *tmuxPane) waitFor(what string, timeout time.Duration, cond func(screen string) bool) (string, time.Duration) {
	p.t.Helper()
	start := time.Now()
	for {
		s := p.capture()
		if cond(s) {
			return s, time.Since(start)
		}
		if time.Since(start) > timeout {
			p.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *tmuxPane) waitText(text string, timeout time.Duration) time.Duration {
	p.t.Helper()
	_, d := p.waitFor(fmt.Sprintf("%q on screen", text), timeout, func(s string) bool { return strings.Contains(s, text) })
	return d
}

var countRE = regexp.MustCompile(`● (\d+) running · ◆ (\d+) to review · ○ (\d+) queued`)

// counts reads the title line's numbers.
func counts(screen string) (running, review, queued int, ok bool) {
	m := countRE.FindStringSubmatch(screen)
	if m == nil {
		return 0, 0, 0, false
	}
	_, _ = fmt.Sscan(m[1], &running)
	_, _ = fmt.Sscan(m[2], &review)
	_, _ = fmt.Sscan(m[3], &queued)
	return running, review, queued, true
}

var reviewRE = regexp.MustCompile(`(?m)^Review (\S+)`)

// waitFreshReview waits for a loaded review of a run that has no verdict
// yet, so a key meant for it never reaches the review before it (the
// screen can lag behind the program on a loaded machine).
func (p *tmuxPane) waitFreshReview(home string) {
	p.t.Helper()
	p.waitFor("a loaded review of a run without a verdict", 20*time.Second, func(s string) bool {
		m := reviewRE.FindStringSubmatch(s)
		if m == nil || !strings.Contains(s, "in the accept") {
			return false
		}
		r, ok := records(p.t, home)[m[1]]
		return ok && r["verdict"] == nil
	})
}

// records reads every run.json under home's runs root, by slug.
func records(t *testing.T, home string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	dirs, _ := filepath.Glob(filepath.Join(home, "runs", "*", "run.json"))
	for _, f := range dirs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r map[string]any
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(filepath.Dir(f))] = r
	}
	return out
}

func e2eGit(t *testing.T, repo string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// TestE2EDemoCockpit: the demo's four runs in mission control, two more
// launched into the queue, a review accepted and another cleaned.
func TestE2EDemoCockpit(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	p := startTUI(t, 160, 45, []string{"TMPDIR=" + tmp, "DIRTYWORK_HOME=" + home},
		// Each scripted turn takes 8 s, so the four runs outlast the two
		// launches below by far, even on a loaded machine.
		"demo", "--sandbox", "none", "--pace", "8s", "--max-parallel", "4")
	p.waitText("the model is scripted", 30*time.Second)
	p.waitFor("four runs running", 60*time.Second, func(s string) bool {
		r, _, _, ok := counts(s)
		return ok && r == 4
	})

	// A fifth and a sixth launch wait in the queue while four run.
	for i, task := range []string{"fifth: fix total", "sixth: fix total"} {
		p.keys("L")
		p.waitText("Launch a run", 30*time.Second)
		p.typeText(task)
		p.keys("C-s")
		p.waitFor(fmt.Sprintf("%d queued and the form closed", i+1), 30*time.Second, func(s string) bool {
			_, _, q, ok := counts(s)
			return ok && q == i+1 && !strings.Contains(s, "Launch a run")
		})
	}
	screen, _ := p.waitFor("two queued while four run", 30*time.Second, func(s string) bool {
		r, _, q, ok := counts(s)
		return ok && q == 2 && r == 4
	})
	if r, _, _, _ := counts(screen); r != 4 {
		t.Fatalf("with two queued, %d run (max 4):\n%s", r, screen)
	}
	if !strings.Contains(screen, "queued (2)") {
		t.Fatalf("the queue is not visible in the list:\n%s", screen)
	}

	// Everything ends; the queued runs started as slots freed.
	p.waitFor("six runs to review", 4*time.Minute, func(s string) bool {
		r, rv, q, ok := counts(s)
		return ok && r == 0 && q == 0 && rv == 6
	})
	if n := len(records(t, home)); n != 6 {
		t.Fatalf("%d runs in the root, want 6", n)
	}

	// Review the oldest and accept it after a moment.
	p.keys("n")
	p.waitFreshReview(home)
	time.Sleep(1200 * time.Millisecond)
	p.keys("a")
	// The accept's own message: the review's header says "accepted" as
	// soon as the verdict is recorded.
	p.waitFor("the accept's message", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "accepted ") && !strings.Contains(s, "Review ")
	})
	var accepted string
	for slug, r := range records(t, home) {
		if r["verdict"] == "accept" {
			if accepted != "" {
				t.Fatalf("two runs accepted: %s and %s", accepted, slug)
			}
			accepted = slug
		}
	}
	if accepted == "" {
		t.Fatal("no run.json records the accept")
	}
	rec := records(t, home)[accepted]
	secs, ok := rec["review_seconds"].(float64)
	if !ok || secs < 1 || secs > 60 {
		t.Fatalf("review_seconds = %v", rec["review_seconds"])
	}
	repo := rec["repo"].(string)
	tip, err := e2eGit(t, repo, "rev-parse", rec["branch"].(string))
	if err != nil || tip != rec["accepted_commit"] {
		t.Fatalf("branch tip %s (%v), accepted_commit %v", tip, err, rec["accepted_commit"])
	}
	if subject, _ := e2eGit(t, repo, "log", "-1", "--format=%s", tip); subject == "" || !strings.Contains(rec["task"].(string), subject) {
		t.Fatalf("commit subject %q is not the task's first line", subject)
	}
	if tip == rec["base_commit"] {
		t.Fatal("accept made no commit on the run branch")
	}

	// Clean the next one: the confirmation names the parked ref.
	p.keys("n")
	p.waitFreshReview(home)
	p.keys("c")
	p.waitText("refs/dirtywork/parked/", 20*time.Second)
	p.waitText("y/enter clean", 20*time.Second)
	p.keys("y")
	// The clean's own message (the review's header says "cleaned" as soon
	// as the verdict is recorded, before the work is parked).
	p.waitFor("the clean's message", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "cleaned ") && !strings.Contains(s, "Review ")
	})
	var cleaned string
	for slug, r := range records(t, home) {
		if r["verdict"] == "cleanup" {
			cleaned = slug
		}
	}
	if cleaned == "" {
		t.Fatal("no run.json records the cleanup")
	}
	crec := records(t, home)[cleaned]
	if _, ok := crec["review_seconds"].(float64); !ok {
		t.Fatalf("cleanup without review_seconds: %v", crec)
	}
	ref := "refs/dirtywork/parked/" + cleaned
	if sha, err := e2eGit(t, repo, "rev-parse", "--verify", ref); err != nil || sha == "" {
		t.Fatalf("parked ref %s: %v %s", ref, err, sha)
	}
	if _, err := os.Stat(crec["worktree"].(string)); !os.IsNotExist(err) {
		t.Fatalf("the cleaned run's worktree is still there: %v", err)
	}

	// Reject the next one with feedback: it is resumed with it.
	p.keys("n")
	p.waitFreshReview(home)
	p.keys("R")
	p.waitText("Reject with feedback", 30*time.Second)
	p.typeText("keep the old name as an alias")
	p.keys("C-s")
	// The resume asks first.
	p.waitText("y/enter reject and resume", 30*time.Second)
	p.keys("y")
	p.waitText("resumed as ", 60*time.Second)
	var rejected, resumed string
	for slug, r := range records(t, home) {
		if r["verdict"] == "reject" {
			rejected = slug
		}
		if fb, _ := r["feedback"].(string); fb == "keep the old name as an alias" {
			resumed = slug
		}
	}
	if rejected == "" || resumed == "" || records(t, home)[resumed]["resumed_from"] != rejected {
		t.Fatalf("rejected %q, resumed %q (from %v)", rejected, resumed, records(t, home)[resumed]["resumed_from"])
	}
	if note, _ := records(t, home)[rejected]["note"].(string); note != "keep the old name as an alias" {
		t.Fatalf("the reject's note = %q", note)
	}
	p.keys("q")
	p.waitText("[exited 0]", 20*time.Second)
	// The resumed run goes on detached; it ends once its scripted model
	// is gone with the demo. Let it, before the test's files go: its
	// process holds the run's liveness lock until it exits.
	waitFor(t, func() bool {
		alive, err := transcript.IsAlive(filepath.Join(home, "runs", resumed))
		return err == nil && !alive
	})
}

// headlessRun makes one real finished run under home (the demo's task, in
// host mode) and returns its stdout object.
func headlessRun(t *testing.T, tmp, home string) map[string]any {
	t.Helper()
	out, errOut, code, err := runCLIProcess(t, "", []string{"TMPDIR=" + tmp, "DIRTYWORK_HOME=" + home}, "demo", "--headless")
	if err != nil || code != 0 {
		t.Fatalf("demo --headless: exit %d %v\n%s", code, err, errOut)
	}
	var payload map[string]any
	if err := json.Unmarshal([]byte(out), &payload); err != nil {
		t.Fatal(err)
	}
	return payload
}

const hostileText = "pwned\x1b]52;c;cHduZWQ=\x07 \x1b]0;pwned-title\x07 \x1b]8;;http://evil.invalid\x07link\x1b]8;;\x07 \x1b[2J\x1b[H \u009b31m bell\x07 \r\x1b[1A \u202eevil"

// TestE2EHostileTranscriptRendersInert: a transcript full of escape
// sequences changes neither the title nor the clipboard, and shows them.
func TestE2EHostileTranscriptRendersInert(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	payload := headlessRun(t, tmp, home)
	// Make the run's transcript hostile: the model's text and a tool's
	// output, as a worker could write them.
	tr := payload["transcript"].(string)
	f, err := os.OpenFile(tr, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []map[string]any{
		{"ts": "2026-11-30T07:38:12.123456+00:00", "event": "assistant", "text": hostileText, "tool_calls": []any{map[string]any{"name": "bash", "arguments": `{"command":"` + strings.ReplaceAll(hostileText, `"`, "") + `"}`}}},
		{"ts": "2026-11-30T07:38:13.123456+00:00", "event": "tool_result", "tool": "bash", "args": "{}", "result": hostileText},
	} {
		line, _ := json.Marshal(ev)
		if _, err := f.Write(append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	p := startTUI(t, 140, 40, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	p.waitText("needs review (1)", 20*time.Second)
	p.waitText("␛]52", 20*time.Second) // the pane shows the text, escapes visible
	p.keys("t")
	p.waitText("Transcript", 30*time.Second)
	p.keys("G", "h", "Enter")
	p.waitText("␛]0;pwned-title␇", 30*time.Second)
	if title := p.tmux("display-message", "-p", "-t", "e2e", "#{pane_title}"); strings.Contains(title, "pwned") {
		t.Fatalf("the transcript set the terminal title: %q", title)
	}
	if bufs := strings.TrimSpace(p.tmux("list-buffers")); bufs != "" {
		t.Fatalf("the transcript wrote the clipboard: %q", bufs)
	}
	screen := p.capture()
	if !strings.Contains(screen, "Transcript") || !strings.Contains(screen, "dirtywork mission control") {
		t.Fatalf("the screen was cleared or moved:\n%s", screen)
	}
	// q goes back from the transcript; on the dashboard it quits.
	p.keys("q")
	p.waitText("Runs 1", 30*time.Second)
	p.keys("q")
	p.waitText("[exited 0]", 20*time.Second)
}

// fakeHeldGit puts a git first on PATH that holds every command until the
// test is over: nothing that waits for git can answer while the test runs.
// At cleanup it lets them go and waits for them to end.
func fakeHeldGit(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gate := filepath.Join(dir, "release")
	script := fmt.Sprintf("#!/bin/sh\nwhile [ ! -e %s ]; do sleep 0.05; done\nexec %s \"$@\"\n", shellQuote(gate), shellQuote(real))
	if err := writeExecutable(filepath.Join(dir, "git"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(gate, nil, 0o600); err != nil {
			t.Error(err)
			return
		}
		// A held git's command line names the script.
		waitFor(t, func() bool { return !strings.Contains(pgrep(t), filepath.Join(dir, "git")) })
	})
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// TestE2ESlowGitDelaysNoKeystroke: while a review waits on a git that does
// not answer, every key still does, and quitting does not wait for it.
func TestE2ESlowGitDelaysNoKeystroke(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	headlessRun(t, tmp, home)
	p := startTUI(t, 140, 40, []string{"DIRTYWORK_HOME=" + home, "PATH=" + fakeHeldGit(t)}, "tui", "--notify", "none")
	p.waitText("needs review (1)", 30*time.Second)
	p.keys("Enter")
	p.waitText("loading the diff", 30*time.Second)
	// Every answer below comes while git is held: none waits for it.
	p.keys("Escape")
	p.waitText("Runs 1", 30*time.Second)
	p.keys("/")
	p.typeText("zzz")
	p.waitText("no run matches the filter", 30*time.Second)
	p.keys("Escape") // alone: ESC and a key at once read as alt+key
	p.waitText("Runs 1 ", 30*time.Second)
	p.keys("S")
	p.waitText("Review statistics", 30*time.Second)
	p.keys("Escape")
	p.waitText("Runs 1 ", 30*time.Second)
	// Quitting does not wait for the git still held either.
	p.keys("q")
	p.waitText("[exited 0]", 30*time.Second)
}

// diffLineRE finds the review's position, "line 40/10,005".
var diffLineRE = regexp.MustCompile(`line ([\d,]+)/([\d,]+)`)

// diffLine is the last diff line on screen and the selected file's
// number of lines, read from the review's rule.
func diffLine(screen string) (at, n int, ok bool) {
	m := diffLineRE.FindStringSubmatch(screen)
	if m == nil {
		return 0, 0, false
	}
	at, err1 := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	n, err2 := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
	return at, n, err1 == nil && err2 == nil
}

// diffLinePosition is diffLine of a screen that must show one.
func diffLinePosition(t *testing.T, screen string) struct{ at, n int } {
	t.Helper()
	at, n, ok := diffLine(screen)
	if !ok {
		t.Fatalf("no diff position on screen:\n%s", screen)
	}
	return struct{ at, n int }{at, n}
}

// TestE2ELargeDiffOpensWithoutFreezing: a 10,000-line change opens, keys
// answer while it does, and the review moves through it with the keys
// of every other view that scrolls.
func TestE2ELargeDiffOpensWithoutFreezing(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	payload := headlessRun(t, tmp, home)
	var b strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&b, "def f%d(x):\n", i)
	}
	if err := os.WriteFile(filepath.Join(payload["worktree"].(string), "big.py"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startTUI(t, 160, 45, []string{"DIRTYWORK_HOME=" + home}, "tui", "--notify", "none")
	p.waitText("needs review (1)", 20*time.Second)
	p.keys("Enter")
	opened := p.waitText("+10000", time.Minute)
	t.Logf("the 10,000-line review was on screen %s after enter (screen polled every 50 ms)", opened)
	// Select the big file and move through it: each key answers, and the
	// rule under the header says where the screen stands. Each l moves the
	// selection once; the next press waits for the screen to show the last
	// one moved.
	selected := func(s string) string {
		for line := range strings.Lines(s) {
			if strings.Contains(line, "▸ ■ ") {
				return line
			}
		}
		return ""
	}
	for screen := p.capture(); !strings.Contains(selected(screen), "big.py"); {
		p.keys("l")
		before := selected(screen)
		screen, _ = p.waitFor("the selection to move", 30*time.Second, func(s string) bool { return selected(s) != before })
	}
	// The header loses its "trying the merge" line when the forecast
	// comes, and the diff gains it: measure from the settled screen.
	screen, _ := p.waitFor("the big file and the merge forecast", 30*time.Second, func(s string) bool {
		return strings.Contains(s, "def f0(x):") && !strings.Contains(s, "trying the merge")
	})
	top := diffLinePosition(t, screen)
	p.keys("j")
	p.waitFor("one line down", 30*time.Second, func(s string) bool {
		at, n, ok := diffLine(s)
		return ok && at == top.at+1 && n == top.n
	})
	p.keys("C-d")
	p.waitFor("half a page down", 30*time.Second, func(s string) bool {
		at, _, ok := diffLine(s)
		return ok && at > top.at+1
	})
	p.keys("PageDown", "PageDown")
	p.waitFor("a later page", 30*time.Second, func(s string) bool { return !strings.Contains(s, "def f0(x):") })
	// The end of a 10,000-line file is one key away, and so is its top.
	p.keys("G")
	p.waitFor("the last line", 30*time.Second, func(s string) bool {
		at, n, ok := diffLine(s)
		return ok && at == n && strings.Contains(s, "def f9999(x):")
	})
	p.keys("g")
	p.waitFor("the top again", 30*time.Second, func(s string) bool {
		at, _, ok := diffLine(s)
		return ok && at == top.at && strings.Contains(s, "def f0(x):")
	})
	p.keys("Escape")
	p.waitText("Runs 1", 30*time.Second)
	p.keys("q")
	p.waitText("[exited 0]", 20*time.Second)
}
