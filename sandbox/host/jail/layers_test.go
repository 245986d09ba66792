//go:build linux

package jail

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMissingLayerRefusedOrReported: a kernel without Landlock is a
// refusal naming the layer and its fix, unless AllowUnconfined, which
// leaves it off and says so in Info. With it off, a write only Landlock
// stopped gets through: the layer does work of its own.
func TestMissingLayerRefusedOrReported(t *testing.T) {
	saved := kernelLandlockABI
	t.Cleanup(func() { kernelLandlockABI = saved })
	kernelLandlockABI = func() int { return 0 }

	_, err := Start(t.Context(), script("true"))
	var se *SetupError
	if !errors.As(err, &se) || se.Layer != LayerLandlock || !errors.Is(err, ErrSetup) || !strings.Contains(err.Error(), "fix:") {
		t.Fatalf("got %v, want a landlock SetupError with a fix", err)
	}
	probe := `echo 500 > /proc/self/oom_score_adj 2>/dev/null && echo wrote`
	r := bash(t, Config{AllowUnconfined: true}, probe)
	if r.info.Landlock.Enabled || len(r.info.Off) != 1 || !strings.HasPrefix(r.info.Off[0], LayerLandlock+": ") {
		t.Errorf("info with Landlock off: %+v", r.info)
	}
	if strings.TrimSpace(r.out) != "wrote" {
		t.Errorf("without Landlock the write failed too, so the test proves nothing: %s", describe(r))
	}
	kernelLandlockABI = saved
	if r := bash(t, Config{}, probe); strings.TrimSpace(r.out) != "" {
		t.Errorf("with Landlock the write got through: %s", describe(r))
	}
}

// TestProbe: on this machine every layer can be had (CI runs where the
// jail is whole), and the report names each.
func TestProbe(t *testing.T) {
	r := Probe(t.Context())
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{LayerUserNS, LayerRoot, LayerNetwork, LayerLandlock, LayerSeccomp, LayerPids, LayerMemory, LayerCPU} {
		st, ok := r.Layer(name)
		if !ok || !st.OK || st.Detail == "" {
			t.Errorf("%s: %+v", name, st)
		}
	}
}

// TestIDMapUnavailable: a root operator's writable mount on a file system
// that cannot be idmapped is a refusal naming the layer, unless
// AllowUnconfined, which runs the jail as the host's uid 0 (capabilities
// still dropped) and says so; a read-only one just shows unmapped.
func TestIDMapUnavailable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Log("idmapped mounts are a root operator's: nothing to test as uid", os.Geteuid())
		return
	}
	saved := parentBind
	t.Cleanup(func() { parentBind = saved })
	parentBind = func(source string, ro, recursive, device bool, userns int) (int, error) {
		if userns >= 0 {
			return -1, &idmapError{source: source, err: unix.EINVAL}
		}
		return saved(source, ro, recursive, device, userns)
	}
	rw := Config{Mounts: []Mount{{Source: t.TempDir(), Target: "/w"}}}
	if r := bash(t, Config{}, "true"); r.err != nil || len(r.info.Off) != 0 {
		t.Fatalf("no configured mount, nothing to idmap: %s", describe(r))
	}
	ro := Config{Mounts: []Mount{{Source: t.TempDir(), Target: "/r", ReadOnly: true}}}
	if r := bash(t, ro, "stat -c %u /r"); r.err != nil || strings.TrimSpace(r.out) != "65534" || len(r.info.Off) != 0 {
		t.Errorf("read-only mount unmapped: %s", describe(r))
	}
	cfg := script("true")
	cfg.Mounts = rw.Mounts
	_, err := Start(t.Context(), cfg)
	var ie *idmapError
	if !errors.As(err, &ie) {
		t.Fatalf("got %v, want the idmap failure", err)
	}
	rw.AllowUnconfined = true
	r := bash(t, rw, "touch /w/f && stat -c %u /w/f && grep CapEff /proc/self/status")
	if r.err != nil || strings.TrimSpace(r.out) != "0\nCapEff:\t0000000000000000" {
		t.Errorf("%s", describe(r))
	}
	if r.info.UserNS.UID.Host != 0 || r.info.UserNS.IDMappedMounts || len(r.info.Off) != 1 || !strings.HasPrefix(r.info.Off[0], LayerIDMap) {
		t.Errorf("info: %+v", r.info)
	}
}

// TestStaleGroup: only a jail cgroup whose maker is gone is stale.
func TestStaleGroup(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid // reaped: no such process now (pids are not reused at once)
	for name, want := range map[string]bool{
		groupPrefix + strconv.Itoa(os.Getpid()) + "-ab12": false,
		groupPrefix + strconv.Itoa(dead) + "-ab12":        true,
		groupPrefix + "x-ab12":                            false,
		"other-" + strconv.Itoa(dead) + "-ab12":           false,
		groupPrefix + strconv.Itoa(dead):                  false,
	} {
		if got := staleGroup(name); got != want {
			t.Errorf("%s: stale %v, want %v", name, got, want)
		}
	}
}

// TestStartCancelled: an ended context stops the setup and leaves nothing.
func TestStartCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if j, err := Start(ctx, script("true")); err == nil {
		_ = j.Kill()
		_ = j.Wait()
		t.Fatal("started with an ended context")
	} else if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}
