//go:build docker

package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// acceptanceLabels are labels only this test's objects carry; when the
// test ends, nothing may carry them any more.
func acceptanceLabels(t *testing.T, cl *docker.Client) map[string]string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"dirtywork.test": hex.EncodeToString(b[:])}
	t.Cleanup(func() {
		ctx, cancel := cleanupCtx(t)
		defer cancel()
		label := "dirtywork.test=" + labels["dirtywork.test"]
		cs, err := cl.ListContainers(ctx, label)
		if err != nil {
			t.Error(err)
		}
		vs, err := cl.ListVolumes(ctx, label)
		if err != nil {
			t.Error(err)
		}
		for _, c := range cs {
			t.Errorf("container %s left behind", c.Name)
			_ = cl.RemoveContainer(ctx, c.ID)
		}
		for _, v := range vs {
			t.Errorf("volume %s left behind", v.Name)
			_ = cl.RemoveVolume(ctx, v.Name, false)
		}
	})
	return labels
}

// acceptanceTree is a host tree holding files (path → content).
func acceptanceTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, body := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// What the checker finds: the tree at /work, the worker's and writable,
// without the host's .git; the checker at /acceptance, read-only; no
// network, no capability, the worker's user, a writable /tmp, a clean
// environment. Its exit code and output come back.
func TestRunAcceptanceSandbox(t *testing.T) {
	t.Parallel()
	cl := liveClient(t)
	labels := acceptanceLabels(t, cl)
	checker := AcceptanceChecker{Engine: cl}
	tree := acceptanceTree(t, map[string]string{"hello.txt": "hi\n", "acceptance/check.sh": "orig", ".git/HEAD": "ref\n"})
	if err := os.Symlink("hello.txt", filepath.Join(tree, "link")); err != nil {
		t.Fatal(err)
	}
	check := `set -u
echo "user $(id -u):$(id -g)"
echo "work $(stat -c %u /work)"
cat /work/hello.txt
readlink /work/link
[ -e /work/.git ] && echo "git is there"
touch /work/new && echo "work writable"
touch /acceptance/x 2>/dev/null && echo "acceptance writable"
touch /x 2>/dev/null && echo "root writable"
touch /tmp/x && echo "tmp writable"
grep -v -e lo: -e Inter -e face /proc/net/dev | grep . && echo "a network"
grep CapEff /proc/self/status
env | sed 's/^/env /' 
echo "pwd $(pwd)"
exit 3
`
	start := time.Now()
	res, err := checker.RunAcceptance(t.Context(), AcceptanceSpec{
		Image:      liveImage,
		TreeDir:    tree,
		Acceptance: fstest.MapFS{"check.sh": {Data: []byte(check)}},
		Command:    "/bin/sh /acceptance/check.sh",
		Guard:      map[string]string{"acceptance/check.sh": sha("orig")},
		Labels:     labels,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := string(res.Output)
	if !res.Ran || res.ExitCode != 3 || res.TimedOut || res.Truncated || res.Duration <= 0 || res.Duration > time.Since(start) {
		t.Errorf("result %+v", res)
	}
	if res.Hashes["acceptance/check.sh"] != sha("orig") {
		t.Errorf("hashes %v", res.Hashes)
	}
	for _, want := range []string{
		"user 1000:1000\n", "work 1000\n", "hi\n", "hello.txt\n", "work writable\n", "tmp writable\n",
		"CapEff:\t0000000000000000\n",
		"env HOME=/tmp\n", "env LANG=C.UTF-8\n", "env PATH=" + pathEnvValue + "\n", "env TMPDIR=/tmp\n", "pwd /work\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, unwanted := range []string{"git is there", "acceptance writable", "root writable", "a network"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("output says %q:\n%s", unwanted, out)
		}
	}
	// Nothing else is in the environment but what docker and sh set.
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "env "), "=")
		if strings.HasPrefix(line, "env ") && !strings.Contains(" HOME LANG PATH TMPDIR HOSTNAME PWD OLDPWD ", " "+name+" ") {
			t.Errorf("the environment holds %s", line)
		}
	}
}

// A command that outlives its deadline is killed and reported as such,
// within a bound of seconds; one that leaves a process behind ends when
// it does; a long output keeps its head and tail.
func TestRunAcceptanceLimits(t *testing.T) {
	t.Parallel()
	cl := liveClient(t)
	labels := acceptanceLabels(t, cl)
	checker := AcceptanceChecker{Engine: cl}
	tree := acceptanceTree(t, map[string]string{"a": "a"})
	script := fstest.MapFS{"check.sh": {Data: []byte("true")}}
	run := func(command string, timeout time.Duration, outputCap int) (AcceptanceResult, time.Duration) {
		t.Helper()
		start := time.Now()
		res, err := checker.RunAcceptance(t.Context(), AcceptanceSpec{
			Image: liveImage, TreeDir: tree, Acceptance: script, Command: command,
			Timeout: timeout, OutputCap: outputCap, Labels: labels,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res, time.Since(start)
	}

	res, took := run("echo started; exec sleep 600", 2*time.Second, 0)
	if !res.TimedOut || res.ExitCode != 137 || string(res.Output) != "started\n" {
		t.Errorf("a hanging command: %+v", res)
	}
	if took > 90*time.Second {
		t.Errorf("a 2 s deadline took %s", took)
	}

	res, _ = run("sleep 600 & echo left a sleeper", time.Hour, 0)
	if res.TimedOut || res.ExitCode != 0 || string(res.Output) != "left a sleeper\n" {
		t.Errorf("a command leaving a process: %+v", res)
	}

	res, _ = run("echo first; yes 0123456789 | head -c 300000; echo; echo last", 0, 1000)
	out := string(res.Output)
	if !res.Truncated || !strings.HasPrefix(out, "first\n") || !strings.HasSuffix(out, "\nlast\n") || len(out) > 1100 {
		t.Errorf("a long output kept %d bytes (truncated %v): %.80q … %.80q", len(out), res.Truncated, out, out[max(0, len(out)-80):])
	}
}

// The tree may be a kept volume, read where it is: the guarded files are
// read without following anything, a link to the checker is no file, and
// the volume is left as it was found.
func TestRunAcceptanceVolume(t *testing.T) {
	t.Parallel()
	cl := liveClient(t)
	ctx := t.Context()
	labels := acceptanceLabels(t, cl)
	checker := AcceptanceChecker{Engine: cl}
	script := fstest.MapFS{"check.sh": {Data: []byte("cat /work/data")}}
	guard := map[string]string{"acceptance/check.sh": sha("cat /work/data")}
	// fill makes the volume name holding the tree at dir, as a run leaves
	// its work volume.
	fill := func(name, dir string) {
		t.Helper()
		if err := cl.CreateVolume(ctx, name, labels); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cctx, cancel := cleanupCtx(t)
			defer cancel()
			if err := cl.RemoveVolume(cctx, name, false); err != nil {
				t.Error(err)
			}
		})
		id, err := cl.CreateContainer(ctx, name+"-fill", daemon.ContainerSpec{
			Image: liveImage, Entrypoint: []string{"/bin/true"}, Labels: labels,
			Network: "none", Mounts: []daemon.Mount{{Volume: name, Target: workDir}},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cl.RemoveContainer(ctx, id) }()
		pr, pw := io.Pipe()
		go func() { _ = pw.CloseWithError(writeWorkTree(pw, dir)) }()
		if err := cl.Upload(ctx, id, workDir, pr); err != nil {
			t.Fatal(err)
		}
	}
	name := "dw-accepttest-" + labels["dirtywork.test"]
	fill(name+"-a", acceptanceTree(t, map[string]string{"acceptance/check.sh": "cat /work/data", "data": "from the volume\n"}))
	res, err := checker.RunAcceptance(ctx, AcceptanceSpec{
		Image: liveImage, Volume: name + "-a", Acceptance: script, Command: "/bin/sh /acceptance/check.sh", Guard: guard, Labels: labels,
	})
	if err != nil || !res.Ran || res.ExitCode != 0 || string(res.Output) != "from the volume\n" || res.Hashes["acceptance/check.sh"] != guard["acceptance/check.sh"] {
		t.Errorf("RunAcceptance = %+v, %v", res, err)
	}

	// acceptance/ is a link to where the checker is mounted, while the
	// guarded files are read or while the command runs: they are not there.
	for i, target := range []string{acceptanceFillDir, acceptanceDir} {
		dir := t.TempDir()
		if err := os.Symlink(target, filepath.Join(dir, "acceptance")); err != nil {
			t.Fatal(err)
		}
		vol := name + "-link" + string(rune('0'+i))
		fill(vol, dir)
		res, err = checker.RunAcceptance(ctx, AcceptanceSpec{
			Image: liveImage, Volume: vol, Acceptance: script, Command: "/bin/sh /acceptance/check.sh", Guard: guard, Labels: labels,
		})
		if err != nil || res.Ran || len(res.Hashes) != 0 {
			t.Errorf("acceptance/ a link to %s: %+v, %v", target, res, err)
		}
	}

	if _, err := checker.RunAcceptance(ctx, AcceptanceSpec{
		Image: liveImage, Volume: name + "-never-made", Acceptance: script, Command: "/bin/sh /acceptance/check.sh", Labels: labels,
	}); !errors.Is(err, ErrVolumeMissing) {
		t.Errorf("a missing volume: %v", err)
	}
	if _, err := checker.RunAcceptance(ctx, AcceptanceSpec{
		Image: "dirtywork-no-such-image:" + labels["dirtywork.test"], Volume: name + "-a", Acceptance: script, Command: "/bin/sh /acceptance/check.sh", Labels: labels,
	}); !errors.Is(err, ErrImageMissing) {
		t.Errorf("a missing image: %v", err)
	}
}

// What a killed check left is found by its labels and removed.
func TestRemoveAcceptance(t *testing.T) {
	t.Parallel()
	cl := liveClient(t)
	ctx := t.Context()
	labels := acceptanceLabels(t, cl)
	checker := AcceptanceChecker{Engine: cl}
	ac, err := newAcceptanceCheck(cl, AcceptanceSpec{TreeDir: "unused", Acceptance: fstest.MapFS{}, Labels: labels}, liveImage)
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.fill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ac.uploadTree(ctx); err == nil {
		t.Fatal("an upload of a missing tree succeeded")
	}
	// The failed check made both volumes and its container; nobody
	// removed them (ac.remove is what a killed process never gets to).
	removed, err := checker.RemoveAcceptance(ctx, labels)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 3 {
		t.Errorf("removed %v, want the fill container and two volumes", removed)
	}
}
