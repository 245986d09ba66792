//go:build docker

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
)

// Environment of the docker tests.
const (
	// requireDockerEnv=1 turns a missing daemon from a skip into a failure.
	requireDockerEnv = "DIRTYWORK_REQUIRE_DOCKER"
	// testDockerHostEnv names the daemon to test against when the machine's
	// DOCKER_HOST is not the one to use; else DOCKER_HOST as the test
	// binary started, else the default socket.
	testDockerHostEnv = "DIRTYWORK_TEST_DOCKER_HOST"
	// dockerTestImage is the worker image the tests run in; it must exist
	// (dirtywork image build --tag dirtywork-worker:dev).
	dockerTestImage = "dirtywork-worker:dev"
)

// startEnv is the environment as the test binary started. Package
// variables are set before TestMain isolates the environment, and these
// tests need the machine's daemon and Go build cache.
var startEnv = map[string]string{
	"HOME": os.Getenv("HOME"), "DOCKER_HOST": os.Getenv("DOCKER_HOST"),
	testDockerHostEnv: os.Getenv(testDockerHostEnv),
}

// dockerHost is the daemon the docker tests use.
func dockerHost() string {
	for _, h := range []string{startEnv[testDockerHostEnv], startEnv["DOCKER_HOST"]} {
		if h != "" {
			return h
		}
	}
	return "unix:///var/run/docker.sock"
}

// requireDaemon skips the test when no daemon answers, unless
// DIRTYWORK_REQUIRE_DOCKER is set, and fails it when the worker image is
// missing.
func requireDaemon(t *testing.T) {
	t.Helper()
	host := dockerHost()
	ep, err := docker.DiscoverEndpoint(func(k string) string {
		if k == "DOCKER_HOST" {
			return host
		}
		return ""
	})
	var cl *docker.Client
	if err == nil {
		cl, err = docker.NewClient(ep)
	}
	if err == nil {
		t.Cleanup(func() { _ = cl.Close() })
		_, err = cl.ServerVersion(t.Context())
	}
	if err != nil {
		if os.Getenv(requireDockerEnv) != "" {
			t.Fatalf("%s is set but no docker daemon answers at %s: %v", requireDockerEnv, host, err)
		}
		t.Skipf("no docker daemon answers at %s (set %s=1 to make this a failure): %v", host, requireDockerEnv, err)
	}
	if _, _, err := cl.ImageExists(t.Context(), dockerTestImage); err != nil {
		t.Fatalf("the worker image is missing (dirtywork image build --tag %s): %v", dockerTestImage, err)
	}
}

// buildDirtywork builds the real, static dirtywork binary: the docker
// sandbox delivers its own binary into the container as the tool server,
// and a test binary cannot serve there.
func buildDirtywork(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the docker tests build dirtywork and need the go command: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "dirtywork")
	cmd := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".")
	// The machine's HOME, so the build cache and module cache are the warm
	// ones rather than TestMain's empty home.
	cmd.Env = append(os.Environ(), "HOME="+startEnv["HOME"], "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The runs of this build share its toolbox volume: the last test to
	// end removes it (the daemon keeps it while another test's container
	// uses it, and a run that finds it gone makes it again).
	if name, err := workspace.ToolboxVolumeName(bin); err == nil {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
			defer cancel()
			_, _, _ = engineRequest(ctx, http.MethodDelete, "/volumes/"+name)
		})
	}
	return bin
}

// dockerRun is one docker run's setting: a repository with two commits,
// the scripted model server on every interface, and a home of its own.
type dockerRun struct {
	t    *testing.T
	bin  string
	repo string
	home string
	srv  *scripted.Server
	base string
	// targets are the model server's addresses as a container would try
	// them: its own loopback and the host's bridge address.
	targets []string
}

// newDockerRun sets a run up; script builds the model's script from the
// addresses the worker will try to reach the model server at.
func newDockerRun(t *testing.T, bin string, script func(targets []string) any) *dockerRun {
	t.Helper()
	d := &dockerRun{t: t, bin: bin, home: filepath.Join(t.TempDir(), "dwhome")}
	// Registered first, so it runs last: after every other cleanup.
	checkNoStoresLeft(t, d.home)
	// Every interface, so that only the sandbox can keep the worker from
	// reaching it, not the address it listens on.
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	d.base = "http://127.0.0.1:" + port + "/v1"
	d.targets = []string{d.base + "/models"}
	if gw := bridgeGateway(); gw != "" {
		d.targets = append(d.targets, "http://"+gw+":"+port+"/v1/models")
	}
	data, err := json.Marshal(script(d.targets))
	if err != nil {
		t.Fatal(err)
	}
	s, err := scripted.ParseScript(data)
	if err != nil {
		t.Fatal(err)
	}
	d.srv = scripted.New(s)
	httpSrv := &http.Server{Handler: d.srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = httpSrv.Serve(ln) }()
	t.Cleanup(func() { _ = httpSrv.Close() })

	d.repo = filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(d.repo, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitOut(t, d.repo, "init", "-q", "-b", "main")
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(d.repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Two commits, so that "exactly one commit reachable" means something.
	write("README.md", "# demo\n")
	gitOut(t, d.repo, "add", "-A")
	gitOut(t, d.repo, "commit", "-q", "-m", "first")
	write("src/app.py", "def main():\n    return 1\n")
	gitOut(t, d.repo, "add", "-A")
	gitOut(t, d.repo, "commit", "-q", "-m", "second")
	return d
}

// bridgeGateway is the host's address on docker's default bridge, where a
// container with a network would reach the host; "" when there is none.
func bridgeGateway() string {
	ifc, err := net.InterfaceByName("docker0")
	if err != nil {
		return ""
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	return ""
}

// command is dirtywork run in docker mode against this setting.
func (d *dockerRun) command(ctx context.Context, task string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, d.bin, "run", "--sandbox", "docker", "--image", dockerTestImage,
		"--repo", d.repo, "--base-url", d.base, "--model", scripted.DefaultModel, "--context-window", "32768", task)
	cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost())
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// slug is the one run's slug, once its run dir exists.
func (d *dockerRun) slug() string {
	entries, _ := os.ReadDir(filepath.Join(d.home, "runs"))
	if len(entries) != 1 {
		return ""
	}
	return entries[0].Name()
}

// removeLeftovers removes the run's container and volumes when the test
// ends, whatever the run left.
func (d *dockerRun) removeLeftovers() {
	d.t.Cleanup(func() { d.removeObjects(d.slug()) })
}

// removeLeftoversOf removes, when the test ends, what the run slug left.
func (d *dockerRun) removeLeftoversOf(slug string) {
	d.t.Cleanup(func() { d.removeObjects(slug) })
}

func (d *dockerRun) removeObjects(slug string) {
	if slug == "" {
		return
	}
	for _, path := range []string{
		"/containers/dw-" + slug + "?force=1", "/containers/dw-" + slug + "-export?force=1",
		"/containers/dw-" + slug + "-measure?force=1", "/containers/dw-" + slug + "-reap?force=1",
		"/volumes/dw-" + slug + "-work?force=1", "/volumes/dw-" + slug + "-tools?force=1",
	} {
		code, _, _ := engineRequest(context.WithoutCancel(d.t.Context()), http.MethodDelete, path)
		if code == http.StatusNoContent && strings.HasSuffix(path, "-work?force=1") {
			releaseStore(d.home, "dw-"+slug+"-work") // a volume the test left, removed here
		}
	}
}

// engineRequest calls the Engine API directly over its unix socket, as
// an observer independent of the code under test.
func engineRequest(ctx context.Context, method, path string) (int, []byte, error) {
	return engineRequestAt(ctx, dockerHost(), method, path)
}

// engineRequestAt is engineRequest to the daemon at host.
func engineRequestAt(ctx context.Context, host, method, path string) (int, []byte, error) {
	sock, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		return 0, nil, fmt.Errorf("the docker tests observe the daemon over a unix socket, not %s", host)
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}, Timeout: 10 * time.Second}
	req, err := http.NewRequestWithContext(ctx, method, "http://docker"+path, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// exists reports whether the daemon knows the container or volume at
// path ("/containers/<name>/json", "/volumes/<name>").
func exists(t *testing.T, path string) bool {
	t.Helper()
	code, body, err := engineRequest(t.Context(), http.MethodGet, path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	switch code {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	t.Fatalf("GET %s: HTTP %d %s", path, code, body)
	return false
}

// leftBehind reports whether a finished docker run left its worker
// container or its work volume. A volume whose removal the run handed off
// to its reap marker (dw-<slug>-reap, labelled dirtywork.reap with the
// volume's name) is not left behind: the marker is waited for and reaped
// here, as the next run would.
func leftBehind(t *testing.T, slug string) bool {
	t.Helper()
	if exists(t, "/containers/dw-"+slug+"/json") {
		return true
	}
	vol := "dw-" + slug + "-work"
	if !exists(t, "/volumes/"+vol) {
		return false
	}
	marker := "/containers/dw-" + slug + "-reap"
	_, body, err := engineRequest(t.Context(), http.MethodGet, marker+"/json")
	var info struct {
		Config struct{ Labels map[string]string }
		State  struct{ Running bool }
	}
	if err != nil || json.Unmarshal(body, &info) != nil || !strings.Contains(info.Config.Labels["dirtywork.reap"], vol) {
		return true
	}
	for deadline := time.Now().Add(time.Minute); running(t, marker+"/json"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reap marker still runs after a minute")
		}
	}
	_, _, _ = engineRequest(t.Context(), http.MethodDelete, marker)
	_, _, _ = engineRequest(t.Context(), http.MethodDelete, "/volumes/"+vol)
	return exists(t, "/volumes/"+vol)
}

// running reports whether the container at path ("/containers/<name>/json")
// exists and runs.
func running(t *testing.T, path string) bool {
	t.Helper()
	code, body, err := engineRequest(t.Context(), http.MethodGet, path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if code == http.StatusNotFound {
		return false
	}
	var info struct{ State struct{ Running bool } }
	if code != http.StatusOK || json.Unmarshal(body, &info) != nil {
		t.Fatalf("GET %s: HTTP %d %s", path, code, body)
	}
	return info.State.Running
}

// probe is the bash command that reports what the worker can see and do,
// one KEY=value line each.
func probe(targets []string) string {
	return strings.Join([]string{
		`echo "UID=$(id -u)"`,
		`grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status | tr -d '\t' | sed 's/:/=/'`,
		`echo "NET=$(ls /sys/class/net | tr '\n' ' ')"`,
		`if touch /probe 2>/dev/null; then echo ROOT=writable; else echo ROOT=readonly; fi`,
		`echo "COMMITS=$(git rev-list --all --count 2>&1)"`,
		`for u in ` + strings.Join(targets, " ") + `; do if curl -sS --max-time 2 "$u" >/dev/null 2>&1; then echo "REACHED $u"; else echo "UNREACHABLE $u"; fi; done`,
	}, "\n")
}

func toolCall(name string, args map[string]any) map[string]any {
	return map[string]any{"tool_calls": []any{map[string]any{"name": name, "arguments": args}}}
}

func TestRunInDocker(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)

	t.Run("the worker is confined and its work comes back", func(t *testing.T) {
		d := newDockerRun(t, bin, func(targets []string) any {
			return map[string]any{"turns": []any{
				toolCall("bash", map[string]any{"command": probe(targets)}),
				toolCall("write_file", map[string]any{"path": "notes/new.txt", "content": "hello from docker\n"}),
				toolCall("edit_file", map[string]any{"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"}),
				map[string]any{"finish": "changed app.py and added notes"},
			}}
		})
		d.removeLeftovers()
		var out, errOut strings.Builder
		cmd := d.command(t.Context(), "probe the sandbox")
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		var payload map[string]any
		if err := json.Unmarshal([]byte(out.String()), &payload); err != nil {
			t.Fatalf("stdout %q: %v\n%s", out.String(), err, errOut.String())
		}
		if cmd.ProcessState.ExitCode() != 0 || payload["status"] != "completed" {
			t.Fatalf("exit %d, payload %v\n%s", cmd.ProcessState.ExitCode(), payload, errOut.String())
		}
		files, _ := json.Marshal(payload["files_changed"])
		if string(files) != `["notes/new.txt","src/app.py"]` {
			t.Fatalf("files_changed %s", files)
		}

		evs := events(t, payload["transcript"].(string))
		var report string
		for _, ev := range evs {
			if ev["event"] == "tool_result" && ev["tool"] == "bash" {
				report = ev["result"].(string)
				break
			}
		}
		t.Logf("the worker's report:\n%s", report)
		lines := map[string]bool{}
		for _, l := range strings.Split(report, "\n") {
			lines[strings.TrimSpace(l)] = true
		}
		for _, want := range []string{
			"exit code: 0", "UID=1000", "CapEff=0000000000000000", "CapPrm=0000000000000000",
			"CapBnd=0000000000000000", "NET=lo", "ROOT=readonly", "COMMITS=1",
		} {
			if !lines[want] {
				t.Errorf("the worker's report lacks %q:\n%s", want, report)
			}
		}
		for _, u := range d.targets {
			if !lines["UNREACHABLE "+u] {
				t.Errorf("the worker could reach the model server at %s:\n%s", u, report)
			}
		}
		start := evs[0]
		if settings, _ := start["sandbox"].(map[string]any); settings["backend"] != "docker" {
			t.Errorf("run_start.sandbox %v", start["sandbox"])
		}
		if end := evs[len(evs)-1]; end["event"] != "run_end" || end["export_status"] != "ok" {
			t.Errorf("run_end %v", end)
		}

		slug := filepath.Base(payload["run_dir"].(string))
		rec := map[string]any{}
		data, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), "run.json"))
		if err != nil || json.Unmarshal(data, &rec) != nil {
			t.Fatalf("run.json: %v\n%s", err, data)
		}
		want := map[string]any{
			"sandbox": "docker", "container": "dw-" + slug, "volume": "dw-" + slug + "-work",
			"image": dockerTestImage, "image_digest": nil, "image_pinned": false, "status": "completed",
			"export_status": "ok",
		}
		for k, v := range want {
			if rec[k] != v {
				t.Errorf("run.json %s = %v, want %v", k, rec[k], v)
			}
		}
		patch, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), "diff.patch"))
		if err != nil || !strings.Contains(string(patch), "-    return 1\n+    return 2") ||
			!strings.Contains(string(patch), "+hello from docker") {
			t.Fatalf("diff.patch (%v):\n%s", err, patch)
		}
		wt := payload["worktree"].(string)
		if got, err := os.ReadFile(filepath.Join(wt, "notes", "new.txt")); err != nil || string(got) != "hello from docker\n" {
			t.Errorf("the lane's notes/new.txt: %q %v", got, err)
		}
		if got, err := os.ReadFile(filepath.Join(wt, "src", "app.py")); err != nil || !strings.Contains(string(got), "return 2") {
			t.Errorf("the lane's src/app.py: %q %v", got, err)
		}
		if leftBehind(t, slug) {
			t.Errorf("the run left its container or volume behind")
		}
	})

	t.Run("a missing image is refused with the command that builds it", func(t *testing.T) {
		d := newDockerRun(t, bin, func([]string) any { return map[string]any{"turns": []any{map[string]any{"finish": "x"}}} })
		cmd := exec.CommandContext(t.Context(), d.bin, "run", "--image", "dirtywork-worker:no-such-tag",
			"--repo", d.repo, "--base-url", d.base, "--model", scripted.DefaultModel, "task")
		cmd.Env = append(os.Environ(), "DIRTYWORK_HOME="+d.home, "DOCKER_HOST="+dockerHost())
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		_ = cmd.Run()
		lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
		hint := lines[len(lines)-1]
		if cmd.ProcessState.ExitCode() != 2 || out.Len() != 0 ||
			!strings.Contains(hint, "dirtywork image build --tag dirtywork-worker:no-such-tag") ||
			!strings.Contains(hint, "--sandbox none") {
			t.Fatalf("exit %d, stdout %q, stderr:\n%s", cmd.ProcessState.ExitCode(), out.String(), errOut.String())
		}
		if d.slug() != "" {
			t.Fatalf("a refused run left a run dir")
		}
	})

	t.Run("a killed dirtywork takes its container along", func(t *testing.T) {
		d := newDockerRun(t, bin, func([]string) any {
			return map[string]any{"turns": []any{
				toolCall("bash", map[string]any{"command": "sleep 300", "timeout": 600}),
				map[string]any{"finish": "never"},
			}}
		})
		d.removeLeftovers()
		cmd := d.command(t.Context(), "sleep in docker")
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		// The model is asked while the container starts; the bash call
		// follows the first reply and runs in the container. Wait for
		// both, however long a busy machine takes.
		var container string
		deadline := time.Now().Add(2 * time.Minute)
		for {
			select {
			case <-done:
				t.Fatalf("dirtywork ended before its loop ran:\n%s", errOut.String())
			default:
			}
			if slug := d.slug(); slug != "" && len(d.srv.ChatRequests()) >= 1 {
				container = "/containers/dw-" + slug + "/json"
				if running(t, container) {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("the run's container was not running 2 min after the start:\n%s", errOut.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-done
		// Gone, or stopped for good: either way nothing of the worker runs
		// on. (The workspace leaves a stopped container for cleanup to
		// find by its labels.)
		deadline = time.Now().Add(5 * time.Second)
		for running(t, container) {
			if time.Now().After(deadline) {
				t.Fatalf("the container still runs 5 s after dirtywork was killed")
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

var outsideQuote = regexp.MustCompile(`resolves outside the worktree \([^)]*\)`)

// TestHostAndDockerRunsAgree runs one scripted run in host mode and in
// docker mode on the same repository: the file tools, grep and list_dir
// must give byte-identical results, and both runs the same changes.
func TestHostAndDockerRunsAgree(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	bin := buildDirtywork(t)
	calls := []map[string]any{
		{"name": "list_dir", "arguments": map[string]any{"path": "src"}},
		{"name": "read_file", "arguments": map[string]any{"path": "src/app.py"}},
		{"name": "grep", "arguments": map[string]any{"pattern": "return", "path": "."}},
		{"name": "edit_file", "arguments": map[string]any{"path": "src/app.py", "old_string": "return 1", "new_string": "return 2"}},
		{"name": "write_file", "arguments": map[string]any{"path": "notes/new.txt", "content": "héllo\nworld\n"}},
		{"name": "insert_after", "arguments": map[string]any{"path": "notes/new.txt", "anchor": "héllo", "text": "between"}},
		{"name": "apply_edits", "arguments": map[string]any{"path": "src/app.py", "edits": []any{map[string]any{"old": "def main", "new": "def run"}}}},
		{"name": "read_file", "arguments": map[string]any{"path": "../outside"}},
		{"name": "list_dir", "arguments": map[string]any{"path": "notes"}},
	}
	script := func([]string) any {
		var turns []any
		for _, c := range calls {
			turns = append(turns, map[string]any{"tool_calls": []any{c}})
		}
		return map[string]any{"turns": append(turns, map[string]any{"finish": "done"})}
	}
	results := map[string][]string{}
	changed := map[string]string{}
	for _, mode := range []string{"none", "docker"} {
		d := newDockerRun(t, bin, script)
		d.removeLeftovers()
		cmd := d.command(t.Context(), "parity")
		for i, a := range cmd.Args {
			if a == "docker" && cmd.Args[i-1] == "--sandbox" {
				cmd.Args[i] = mode
			}
		}
		var out strings.Builder
		cmd.Stdout = &out
		var errOut strings.Builder
		cmd.Stderr = &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s run: %v\n%s", mode, err, errOut.String())
		}
		var payload map[string]any
		if err := json.Unmarshal([]byte(out.String()), &payload); err != nil || payload["status"] != "completed" {
			t.Fatalf("%s run: %v %s\n%s", mode, err, out.String(), errOut.String())
		}
		diff := ""
		for _, ev := range events(t, payload["transcript"].(string)) {
			if ev["event"] == "run_end" {
				// The same diff, computed in Go against the base blobs in
				// both modes.
				patch := ""
				if p, ok := ev["patch_path"].(string); ok {
					data, err := os.ReadFile(p)
					if err != nil {
						t.Fatalf("%s run: the patch: %v", mode, err)
					}
					patch = string(data)
				}
				diff = fmt.Sprintf("%v\n%s", ev["diff_stat"], patch)
			}
			if ev["event"] == "tool_result" && ev["tool"] != "finish" {
				// The two runs' worktrees differ in path; results name only
				// paths relative to them, except an escape's message.
				r := strings.ReplaceAll(ev["result"].(string), payload["worktree"].(string), "<root>")
				r = strings.ReplaceAll(r, "/work", "<root>")
				// An escape is refused in both; the resolved path it quotes
				// is outside either root, so differs by construction.
				r = outsideQuote.ReplaceAllString(r, "resolves outside the worktree (...)")
				results[mode] = append(results[mode], r)
			}
		}
		files, _ := json.Marshal(payload["files_changed"])
		wt := payload["worktree"].(string)
		app, _ := os.ReadFile(filepath.Join(wt, "src", "app.py"))
		note, _ := os.ReadFile(filepath.Join(wt, "notes", "new.txt"))
		changed[mode] = string(files) + "\n" + string(app) + "\n" + string(note) + "\n" + diff
	}
	if len(results["none"]) != len(calls) || len(results["docker"]) != len(calls) {
		t.Fatalf("results: host %d, docker %d", len(results["none"]), len(results["docker"]))
	}
	for i := range calls {
		if results["none"][i] != results["docker"][i] {
			t.Errorf("%s differs:\nhost:   %q\ndocker: %q", calls[i]["name"], results["none"][i], results["docker"][i])
		}
	}
	if changed["none"] != changed["docker"] {
		t.Errorf("the runs changed different things:\nhost:\n%s\ndocker:\n%s", changed["none"], changed["docker"])
	}
}
