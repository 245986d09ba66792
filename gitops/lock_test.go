package gitops

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// testRepoState is a Repo with only a common dir, which is all the lock
// needs.
func testRepoState(t *testing.T) Repo {
	return Repo{CommonDir: t.TempDir()}
}

func TestLockRepoIsExclusiveAndHonoursContext(t *testing.T) {
	t.Parallel()
	repo := testRepoState(t)
	first, err := LockRepo(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if l, err := LockRepo(ctx, repo); !errors.Is(err, context.DeadlineExceeded) {
		if l != nil {
			_ = l.Unlock()
		}
		t.Fatalf("second lock while held: err = %v, want context.DeadlineExceeded", err)
	}

	acquired := make(chan error, 1)
	go func() {
		l, err := LockRepo(t.Context(), repo)
		if err == nil {
			err = l.Unlock()
		}
		acquired <- err
	}()
	select {
	case err := <-acquired:
		t.Fatalf("lock acquired while still held (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := first.Unlock(); err != nil {
		t.Errorf("second Unlock: %v", err)
	}
	select {
	case err := <-acquired:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiting locker did not get the lock within 5s of its release")
	}
}

// TestLockReleasedWhenHolderIsKilled: a process killed while holding the
// lock (a crash) does not leave the repository locked.
func TestLockReleasedWhenHolderIsKilled(t *testing.T) {
	t.Parallel()
	repo := testRepoState(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+repo.CommonDir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Already dead and reaped on the normal path; these only matter
		// when the test failed early.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := LockRepo(ctx, repo); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock while the helper holds it: err = %v", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the helper exited cleanly; it should have been killed")
	}
	ctx, cancel = context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	l, err := LockRepo(ctx, repo)
	if err != nil {
		t.Fatalf("lock after the holder died: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestLockRepoRefusesSymlinkedStateDir(t *testing.T) {
	t.Parallel()
	repo := testRepoState(t)
	if err := os.Symlink(t.TempDir(), repo.StateDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := LockRepo(t.Context(), repo); !errors.Is(err, ErrUnsafeFile) {
		t.Fatalf("err = %v, want ErrUnsafeFile", err)
	}
}

func TestLockRepoStateDirIsPrivate(t *testing.T) {
	t.Parallel()
	repo := testRepoState(t)
	l, err := LockRepo(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Unlock() }()
	for path, want := range map[string]os.FileMode{repo.StateDir(): 0o700 | os.ModeDir, filepath.Join(repo.StateDir(), lockName): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s mode = %v, want %v", path, fi.Mode(), want)
		}
	}
}
