package host

import (
	"errors"
	"strings"
	"testing"
)

// CI must run with Landlock enforced: a kernel without it fails here.
func TestLandlockEnforced(t *testing.T) {
	w := open(t, newTestRepo(t).config())
	info := w.Info()
	if info.Landlock.ABI < 1 || !info.Landlock.Enforced {
		t.Fatalf("Landlock %+v: want ABI >= 1, enforced (this machine must enforce Landlock)", info.Landlock)
	}
	if !info.PrivateMounts || info.Warning != "" {
		t.Fatalf("info %+v: want private mounts and no warning", info)
	}
}

func TestKernelWithoutLandlock(t *testing.T) {
	saved := kernelABI
	kernelABI = func() int { return 0 }
	t.Cleanup(func() { kernelABI = saved })
	r := newTestRepo(t)

	_, err := Open(t.Context(), r.config())
	if !errors.Is(err, ErrNoLandlock) || !strings.Contains(err.Error(), "DIRTYWORK_ALLOW_UNCONFINED=1") {
		t.Fatalf("Open with RequireLandlock: %v, want ErrNoLandlock naming the switch", err)
	}

	cfg := r.config()
	cfg.RequireLandlock = false
	w := open(t, cfg)
	info := w.Info()
	if info.Landlock.Enforced || info.Landlock.ABI != 0 || !strings.Contains(info.Warning, "no Landlock") {
		t.Fatalf("info %+v: want Landlock not enforced and a warning saying so", info)
	}
	// Unconfined means exactly that: bash may write outside the worktree
	// (here, into the fake home), which the confined tests show it cannot.
	if out, code := bash(t, w, "echo x > "+r.home+"/unconfined && echo wrote"); code != 0 || out != "wrote\n" {
		t.Fatalf("unconfined write: %q exit %d", out, code)
	}
	// The private mount namespace still hides /run.
	if !info.PrivateMounts {
		t.Error("private mounts were dropped along with Landlock")
	}
}
