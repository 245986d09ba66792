package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
)

// What a run takes of the host beyond its tree, tried through `dirtywork
// run` with a scripted model, as root and as an unprivileged user: setuid
// files, toolchain secrets, CPU.

// heldRun is a host run whose last command waits, blocked on a FIFO in
// its worktree, until the test releases it: the test looks at the host
// meanwhile.
type heldRun struct {
	e        *escapeRun
	cmd      *exec.Cmd
	out, err strings.Builder
	// worktree is the run's worktree, known once the command waits.
	worktree string
}

// holdCommand is the command that waits: it makes the FIFO, says it is
// ready, and reads the FIFO until the test closes it.
const holdCommand = "mkfifo hold && touch ready && cat hold >/dev/null; echo released"

// call is a scripted turn of one tool call.
func call(name string, args map[string]any) map[string]any {
	return map[string]any{"tool_calls": []map[string]any{{"name": name, "arguments": args}}}
}

// bashCall is a scripted turn running command.
func bashCall(command string) map[string]any { return call("bash", map[string]any{"command": command}) }

// startHeld starts a host run of turns, the last of which should run
// holdCommand, and waits (on inotify, not on a clock) until it is ready.
func (e *escapeRun) startHeld(turns []map[string]any, extra ...string) *heldRun {
	t := e.t
	t.Helper()
	turns = append(turns, map[string]any{"finish": "done"})
	srv := startScripted(t, map[string]any{"turns": turns})
	lanes := filepath.Join(e.repo, ".worktrees")
	if err := os.Mkdir(lanes, 0o755); err != nil {
		t.Fatal(err)
	}
	if e.cred != nil {
		if err := os.Chown(lanes, int(e.cred.Uid), int(e.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	watch := newDirWatch(t, lanes)
	args := append([]string{
		"run", "--sandbox", "none", "--repo", e.repo, "--base-url", srv,
		"--model", scripted.DefaultModel, "--context-window", "32768",
	}, extra...)
	h := &heldRun{e: e, cmd: e.command(e.repo, e.bin, append(args, "held run")...)}
	h.cmd.Env = append(h.cmd.Env, testMainEnv+"=1")
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.err
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	ready, err := watch.await("ready", 2*time.Minute)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, h.err.String())
	}
	h.worktree = filepath.Dir(ready)
	return h
}

// release lets the waiting command end and returns the run's payload.
func (h *heldRun) release() map[string]any {
	t := h.e.t
	t.Helper()
	// Opening the FIFO for writing waits for its reader, which is there.
	f, err := os.OpenFile(filepath.Join(h.worktree, "hold"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	_ = h.cmd.Wait()
	var payload map[string]any
	if err := json.Unmarshal([]byte(h.out.String()), &payload); err != nil {
		t.Fatalf("stdout %q: %v\n%s", h.out.String(), err, h.err.String())
	}
	return payload
}

// dirWatch reports files created in the directories directly below a
// directory, through inotify.
type dirWatch struct {
	t       *testing.T
	fd      int
	parent  string
	watched map[string]bool
}

func newDirWatch(t *testing.T, parent string) *dirWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	w := &dirWatch{t: t, fd: fd, parent: parent, watched: map[string]bool{}}
	if _, err := unix.InotifyAddWatch(fd, parent, unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR); err != nil {
		t.Fatal(err)
	}
	return w
}

// await returns the path of the first file called name in a directory
// below the parent, waiting for the kernel to report one; the bound is
// only a liveness one.
func (w *dirWatch) await(name string, bound time.Duration) (string, error) {
	deadline := time.Now().Add(bound)
	buf := make([]byte, 64<<10)
	for {
		// Watch every directory there now, then look: a file made before
		// its directory was watched is found by the look.
		entries, _ := os.ReadDir(w.parent)
		for _, e := range entries {
			dir := filepath.Join(w.parent, e.Name())
			if !e.IsDir() || w.watched[dir] {
				continue
			}
			if _, err := unix.InotifyAddWatch(w.fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
				return "", fmt.Errorf("watch %s: %w", dir, err)
			}
			w.watched[dir] = true
		}
		if m, _ := filepath.Glob(filepath.Join(w.parent, "*", name)); len(m) > 0 {
			return m[0], nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return "", fmt.Errorf("no %s appeared below %s", name, w.parent)
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(left.Milliseconds())+1); err != nil && !errors.Is(err, unix.EINTR) {
			return "", err
		}
		for {
			if _, err := unix.Read(w.fd, buf); err != nil {
				break // drained (EAGAIN)
			}
		}
	}
}

// setIDAttempts is a script of a worker's ways to leave a setuid or
// setgid file in the directory it is given. It is written with a file
// tool and run as a file, as a worker would get past the deny-list, which
// reads command lines and is only the accident guard.
const setIDAttempts = `cd "$1" || exit 1
touch a b c && mkdir d && chmod 4755 a; chmod u+s,g+s b; chmod g+s d
install -m 4755 /bin/true installed; install -d -m 2755 installed-dir; mkdir -m 2775 mkdir-sgid
python3 -c "import os; os.close(os.open('py-open', os.O_CREAT|os.O_WRONLY, 0o4755)); os.chmod('c', 0o6755); os.mkdir('py-dir', 0o2755)"
tar -cf /tmp/t.tar --mode=6755 a && mkdir -p x && tar -xpf /tmp/t.tar -C x
setcap cap_setuid+ep a
python3 -c "import os; os.setxattr('a', 'security.capability', bytes([1,0,0,2,128,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]))"`

// TestRunSetIDEscapesFail: nothing the worker does leaves a setuid or
// setgid file (or a file capability) in the worktree or in its private
// git dir, both of which land on the host: checked on the host while the
// run still holds the git dir, and in the worktree after the run.
func TestRunSetIDEscapesFail(t *testing.T) {
	t.Parallel()
	for _, cred := range escapeUsers(t) {
		t.Run(userName(cred), func(t *testing.T) {
			e := newEscapeRun(t, cred)
			h := e.startHeld([]map[string]any{
				call("write_file", map[string]any{"path": "attempts.sh", "content": setIDAttempts + "\n"}),
				bashCall(`gd=$(git rev-parse --absolute-git-dir) && echo "$gd" > gitdir.txt && for d in "$PWD" "$gd"; do bash attempts.sh "$d" >/dev/null 2>&1; done; ls "$gd"`),
				bashCall(holdCommand),
			})
			gitDir, err := os.ReadFile(filepath.Join(h.worktree, "gitdir.txt"))
			if err != nil {
				t.Fatal(err)
			}
			gd := strings.TrimSpace(string(gitDir))
			for _, dir := range []string{h.worktree, gd} {
				if bad := setIDEntries(t, dir); len(bad) > 0 {
					t.Errorf("on the host, in %s:\n%s", dir, strings.Join(bad, "\n"))
				}
			}
			if _, err := os.Stat(filepath.Join(gd, "a")); err != nil {
				t.Errorf("the attempts did not run in the git dir: %v", err)
			}
			payload := h.release()
			if payload["status"] != "completed" {
				t.Fatalf("payload %v", payload)
			}
			if bad := setIDEntries(t, h.worktree); len(bad) > 0 {
				t.Errorf("after the run:\n%s", strings.Join(bad, "\n"))
			}
		})
	}
}

// setIDEntries lists the entries under dir with the setuid or setgid bit
// or a security.capability attribute.
func setIDEntries(t *testing.T, dir string) []string {
	t.Helper()
	var bad []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			bad = append(bad, fmt.Sprintf("%s mode %o", p, st.Mode))
		}
		if d.Type()&fs.ModeSymlink == 0 {
			if _, err := unix.Lgetxattr(p, "security.capability", nil); err == nil {
				bad = append(bad, p+" has security.capability")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return bad
}

// runStartSandbox is run_start's sandbox object of a finished run.
func runStartSandbox(t *testing.T, payload map[string]any) map[string]any {
	t.Helper()
	for _, ev := range events(t, payload["transcript"].(string)) {
		if ev["event"] == "run_start" {
			s, _ := ev["sandbox"].(map[string]any)
			return s
		}
	}
	t.Fatal("no run_start")
	return nil
}

// TestRunHostCPULimit: --cpus reaches the jail's cgroup, read on the host
// while a command of the run waits; run_start and run.json report the cap
// and the descriptor and pty limits; where no cpu controller can be had
// (an unprivileged operator on cgroup v1) they say the jail runs at a
// lower priority instead.
func TestRunHostCPULimit(t *testing.T) {
	t.Parallel()
	for _, cred := range escapeUsers(t) {
		t.Run(userName(cred), func(t *testing.T) {
			e := newEscapeRun(t, cred)
			h := e.startHeld([]map[string]any{bashCall(holdCommand)}, "--cpus", "0.5")
			groups, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/cpu/dirtywork/jail-%d-*", h.cmd.Process.Pid))
			if v2, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/dirtywork/jail-%d-*", h.cmd.Process.Pid)); len(v2) > 0 {
				groups = v2
			}
			quota := ""
			for _, g := range groups {
				for _, f := range []string{"cpu.cfs_quota_us", "cpu.max"} {
					if data, err := os.ReadFile(filepath.Join(g, f)); err == nil {
						quota = strings.TrimSpace(string(data))
					}
				}
			}
			payload := h.release()
			if payload["status"] != "completed" {
				t.Fatalf("payload %v", payload)
			}
			sb := runStartSandbox(t, payload)
			layer, _ := sb["layers"].(map[string]any)["cpu_limit"].(map[string]any)
			detail, _ := layer["detail"].(string)
			if sb["cpus"] != 0.5 || sb["ptys"] != float64(64) || sb["nofile"] == nil {
				t.Errorf("run_start.sandbox cpus %v nofile %v ptys %v", sb["cpus"], sb["nofile"], sb["ptys"])
			}
			rec, err := os.ReadFile(filepath.Join(payload["run_dir"].(string), "run.json"))
			if err != nil {
				t.Fatal(err)
			}
			var record struct {
				Jail struct {
					Limits struct {
						CPU struct {
							CPUs      float64 `json:"cpus"`
							Quota     int64   `json:"quota_us"`
							Mechanism string  `json:"mechanism"`
						} `json:"cpu"`
						Nofile struct{ Max int64 } `json:"nofile"`
						Ptys   struct{ Max int64 } `json:"ptys"`
					} `json:"limits"`
				} `json:"jail"`
			}
			if err := json.Unmarshal(rec, &record); err != nil {
				t.Fatal(err)
			}
			l := record.Jail.Limits
			if l.CPU.CPUs != 0.5 || l.Nofile.Max != int64(sb["nofile"].(float64)) || l.Ptys.Max != 64 {
				t.Errorf("run.json's jail limits %+v", l)
			}
			switch {
			case strings.HasPrefix(l.CPU.Mechanism, "cgroup-"):
				if (quota != "50000" && quota != "50000 100000") || l.CPU.Quota != 50000 || !strings.HasPrefix(detail, "cgroup-") {
					t.Errorf("the jail's cpu quota %q, run.json %+v, cpu_limit %q", quota, l.CPU, detail)
				}
			case cred == nil && os.Geteuid() == 0:
				t.Errorf("a root operator's run has no cpu controller: %+v", l.CPU)
			default:
				if l.CPU.Mechanism != "nice" || !strings.HasPrefix(detail, "nice 10") || quota != "" {
					t.Errorf("the fallback: run.json %+v, cpu_limit %q, quota %q", l.CPU, detail, quota)
				}
			}
		})
	}
}

// TestRunHostToolchainSecrets: a toolchain in the operator's home runs in
// the jail, but its registry token, a private file in a directory it
// needs and a global npmrc with a token cannot be read, so nothing of
// them reaches the model; run_start says what was exposed and withheld.
func TestRunHostToolchainSecrets(t *testing.T) {
	t.Parallel()
	for _, cred := range escapeUsers(t) {
		t.Run(userName(cred), func(t *testing.T) {
			e := newEscapeRun(t, cred)
			cargo, nvm := filepath.Join(e.dir, ".cargo"), filepath.Join(e.dir, ".nvm")
			for _, f := range []struct {
				path, content string
				mode          os.FileMode
			}{
				{filepath.Join(cargo, "bin", "cargo"), "#!/bin/sh\necho cargo-ran\n", 0o755},
				{filepath.Join(cargo, "credentials.toml"), "token = \"SECRET-TOKEN-1\"\n", 0o600},
				{filepath.Join(cargo, "registry", "private"), "SECRET-TOKEN-2\n", 0o600},
				{filepath.Join(nvm, "versions", "node", "v20.0.0", "etc", "npmrc"), "_authToken=SECRET-TOKEN-3\n", 0o644},
			} {
				e.hostFile(f.path, f.content, f.mode)
			}
			payload := e.run([]string{
				`"$CARGO_HOME/bin/cargo"; cat "$CARGO_HOME/credentials.toml" "$CARGO_HOME/registry/private" "$NVM_DIR"/versions/node/*/etc/npmrc; grep -rs SECRET "$CARGO_HOME" "$NVM_DIR"; true`,
			})
			if payload["status"] != "completed" {
				t.Fatalf("payload %v", payload)
			}
			transcript, err := os.ReadFile(payload["transcript"].(string))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(transcript), "SECRET-TOKEN") || !strings.Contains(string(transcript), "cargo-ran") {
				t.Errorf("the transcript:\n%s", transcript)
			}
			sb := runStartSandbox(t, payload)
			roots, _ := sb["toolchains"].([]any)
			var seen []string
			for _, r := range roots {
				root := r.(map[string]any)
				seen = append(seen, root["var"].(string))
				if root["var"] != "CARGO_HOME" {
					continue
				}
				exposed, _ := json.Marshal(root["exposed"])
				withheld, _ := json.Marshal(root["withheld"])
				if !strings.Contains(string(exposed), "/.cargo/bin") || strings.Contains(string(exposed), "credentials") ||
					!strings.Contains(string(withheld), "credentials.toml") {
					t.Errorf("CARGO_HOME exposed %s withheld %s", exposed, withheld)
				}
			}
			if !strings.Contains(strings.Join(seen, " "), "CARGO_HOME") || sb["toolchain_private"] == nil {
				t.Errorf("run_start.sandbox toolchains %v, toolchain_private %v", sb["toolchains"], sb["toolchain_private"])
			}
		})
	}
}

// hostFile writes a file of the run's user under its home.
func (e *escapeRun) hostFile(path, content string, mode os.FileMode) {
	e.t.Helper()
	for d := filepath.Dir(path); d != e.dir && strings.HasPrefix(d, e.dir); d = filepath.Dir(d) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			e.t.Fatal(err)
		}
		e.chown(d)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		e.t.Fatal(err)
	}
	e.chown(path)
}

func (e *escapeRun) chown(p string) {
	if e.cred == nil {
		return
	}
	if err := os.Chown(p, int(e.cred.Uid), int(e.cred.Gid)); err != nil {
		e.t.Fatal(err)
	}
}
