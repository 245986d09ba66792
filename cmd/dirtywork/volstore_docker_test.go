//go:build docker

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Work volumes whose size the kernel holds live in images under
// <home>/volumes on loop devices, mounted beside them. The helpers here
// look at them as an observer independent of the code under test: the
// kernel's own listing, umount and losetup.

// storesUnder lists what of volume file systems is left under home: the
// images, and the loop devices backed by a file there.
func storesUnder(home string) []string {
	var left []string
	for _, pattern := range []string{"*.ext4", "*.mnt"} {
		found, _ := filepath.Glob(filepath.Join(home, "volumes", pattern))
		left = append(left, found...)
	}
	for dev, backing := range loopBackings() {
		if strings.HasPrefix(backing, home+"/") {
			left = append(left, dev+" ("+backing+")")
		}
	}
	return left
}

// loopBackings maps each attached loop device to its backing file.
func loopBackings() map[string]string {
	out := map[string]string{}
	dirs, _ := filepath.Glob("/sys/block/loop*")
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "loop", "backing_file")); err == nil {
			out["/dev/"+filepath.Base(d)] = strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		}
	}
	return out
}

// releaseStore detaches the loop devices backed by the image of volume
// under home, and deletes it: what a test that removes a volume behind
// dirtywork's back must do too.
func releaseStore(home, volume string) {
	image := filepath.Join(home, "volumes", volume+".ext4")
	mount := filepath.Join(home, "volumes", volume+".mnt")
	_ = exec.Command("umount", mount).Run()
	_ = os.Remove(mount)
	for dev, backing := range loopBackings() {
		if backing == image {
			_ = exec.Command("losetup", "-d", dev).Run()
		}
	}
	_ = os.Remove(image)
}

// checkNoStoresLeft fails the test when anything of a volume file system
// is left under home when it ends, and removes it.
func checkNoStoresLeft(t *testing.T, home string) {
	t.Cleanup(func() {
		left := storesUnder(home)
		if len(left) == 0 {
			return
		}
		t.Errorf("volume file systems left: %q", left)
		mounts, _ := filepath.Glob(filepath.Join(home, "volumes", "*.mnt"))
		for _, m := range mounts {
			_ = exec.Command("umount", m).Run()
		}
		for dev, backing := range loopBackings() {
			if strings.HasPrefix(backing, home+"/") {
				_ = exec.Command("losetup", "-d", dev).Run()
			}
		}
		_ = os.RemoveAll(filepath.Join(home, "volumes"))
	})
}

// sizeLimitKind is run_start's sandbox.size_limit.kind of the run in runDir.
func sizeLimitKind(t *testing.T, runDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "transcript.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var ev struct {
			Event   string `json:"event"`
			Sandbox struct {
				SizeLimit struct {
					Kind, Reason string
				} `json:"size_limit"`
			} `json:"sandbox"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Event == "run_start" {
			t.Logf("size_limit: %s %s", ev.Sandbox.SizeLimit.Kind, ev.Sandbox.SizeLimit.Reason)
			return ev.Sandbox.SizeLimit.Kind
		}
	}
	return ""
}
