//go:build docker

package workspace

import (
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox"
	"github.com/dirtywork/dirtywork/sandbox/docker/volstore"
)

// openStored opens a workspace whose size the kernel holds, with limits,
// and checks that it says so and runs no measuring sidecar.
func openStored(t *testing.T, limits sandbox.Limits) *Workspace {
	t.Helper()
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"a.txt": "a\n"})
	cfg := liveConfig(slug, r)
	cfg.Limits = limits
	w := openLive(t, cfg)
	sl, _ := w.Settings()["size_limit"].(map[string]any)
	if sl["kind"] != sizeFilesystem || w.store == nil {
		t.Fatalf("size_limit %v: the kernel does not hold the size on this machine", sl)
	}
	if b, _ := sl["bytes"].(int64); b < limits.MaxBytes || b > limits.MaxBytes+2*volstore.Slack {
		t.Errorf("size_limit.bytes %d for a %d-byte cap", b, limits.MaxBytes)
	}
	if err := w.waitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if w.currentMeasurer() != nil {
		t.Error("a measuring sidecar runs although the kernel holds the size")
	}
	if _, err := w.eng.InspectContainer(t.Context(), w.names.Measurer); err == nil {
		t.Error("a measuring sidecar exists although the kernel holds the size")
	}
	return w
}

// peak samples, while a command runs, the most the volume's file system
// held and the most of the host's disk its image took.
type peak struct {
	mu           sync.Mutex
	bytes, image int64
	stop         chan struct{}
	done         sync.WaitGroup
}

func watchPeak(w *Workspace) *peak {
	p := &peak{stop: make(chan struct{})}
	p.done.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, _, ok := w.store.Usage(); ok {
				p.mu.Lock()
				p.bytes = max(p.bytes, b)
				p.mu.Unlock()
			}
			var st syscall.Stat_t
			if syscall.Stat(w.store.Image, &st) == nil {
				p.mu.Lock()
				p.image = max(p.image, st.Blocks*512)
				p.mu.Unlock()
			}
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	})
	return p
}

func (p *peak) end() (bytes, image int64) {
	close(p.stop)
	p.done.Wait()
	return p.bytes, p.image
}

// budgetAfter is the budget error command ends with, or, when the kernel
// refused it quietly and the watchdog had not yet read the file system,
// the next command's.
func budgetAfter(t *testing.T, w *Workspace, command string) *sandbox.BudgetError {
	t.Helper()
	_, err := w.Bash(t.Context(), command, 120*time.Second)
	if err == nil {
		_, err = w.Bash(t.Context(), "true", 30*time.Second)
	}
	var be *sandbox.BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("%q: %v, want the budget error", command, err)
	}
	return be
}

// The byte cap is a limit the kernel holds: neither fallocate of 4 GB nor
// a write loop ever puts more than the cap (and the file system's slack)
// into a 50 MB volume, at any moment; the run ends budget_exceeded with
// the contract's text.
func TestLiveFilesystemHoldsTheByteCap(t *testing.T) {
	const capBytes = 50 << 20
	for name, command := range map[string]string{
		// 4 GB at once (past the 512 MiB file size limit commands run
		// under, so refused whole), then 4 GB in files under it.
		"fallocate": "fallocate -l 4G big; for i in $(seq 10); do fallocate -l 400M f$i; done",
		"dd loop":   "for i in $(seq 100); do dd if=/dev/zero of=f$i bs=1M count=10 2>/dev/null || true; done",
	} {
		t.Run(name, func(t *testing.T) {
			w := openStored(t, sandbox.Limits{MaxBytes: capBytes, MaxEntries: 5000})
			p := watchPeak(w)
			be := budgetAfter(t, w, command)
			bytes, image := p.end()
			t.Logf("the file system held at most %.1f MB, the image took at most %.1f MB of the host's disk; %s",
				float64(bytes)/(1<<20), float64(image)/(1<<20), be.Reason)
			if !strings.HasPrefix(be.Reason, "worktree exceeds 50 MB") {
				t.Errorf("reason %q", be.Reason)
			}
			// The cap, the file system's slack, and what ext4 keeps back
			// for its own metadata (extent blocks) and may use.
			if bytes > capBytes+volstore.Slack+1<<20 {
				t.Errorf("the file system held %d bytes, over the cap and its slack", bytes)
			}
			// The image holds the tree and the file system's metadata
			// (journal, inode tables, bitmaps), no more.
			if image > capBytes+volstore.Slack+8<<20 {
				t.Errorf("the image took %d bytes of the host's disk", image)
			}
			fin, err := w.Finalize(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if fin.WatchdogViolation == nil || !strings.HasPrefix(*fin.WatchdogViolation, "worktree exceeds 50 MB") {
				t.Errorf("watchdog_violation %v", fin.WatchdogViolation)
			}
		})
	}
}

// The entry cap is the file system's inode count: a loop creating files
// stops at the cap (within mke2fs's rounding of inodes to whole inode
// table blocks), and the run ends budget_exceeded.
func TestLiveFilesystemHoldsTheEntryCap(t *testing.T) {
	const capEntries = 300
	w := openStored(t, sandbox.Limits{MaxBytes: 64 << 20, MaxEntries: capEntries})
	be := budgetAfter(t, w, "i=0; while touch f$i 2>/dev/null; do i=$((i+1)); done; echo $i")
	if !strings.HasPrefix(be.Reason, "worktree exceeds 300 entries") {
		t.Errorf("reason %q", be.Reason)
	}
	if _, err := w.Finalize(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, entries, ok := w.store.Usage()
	if !ok {
		t.Fatal("the volume's file system is not mounted")
	}
	t.Logf("%d entries in the volume; %s", entries, be.Reason)
	if entries <= capEntries || entries > capEntries+1+16 {
		t.Errorf("%d entries in the volume, want the cap (%d) and at most 17 more", entries, capEntries)
	}
}
