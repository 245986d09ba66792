//go:build docker

package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EDemoCockpitDocker: the demo's four tasks in the docker sandbox,
// reviewed and accepted in mission control.
func TestE2EDemoCockpitDocker(t *testing.T) {
	t.Parallel()
	requireDaemon(t)
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	bin := buildDirtywork(t)
	p := startTUIWith(t, bin, 160, 45, []string{"TMPDIR=" + tmp, "DIRTYWORK_HOME=" + home, "DOCKER_HOST=" + dockerHost()},
		"demo", "--sandbox", "docker", "--image", "dirtywork-worker:dev")
	p.waitText("the model is scripted", 30*time.Second)
	p.waitFor("four runs to review", 5*time.Minute, func(s string) bool {
		r, rv, q, ok := counts(s)
		return ok && r == 0 && q == 0 && rv == 4
	})
	recs := records(t, home)
	if len(recs) != 4 {
		t.Fatalf("%d runs, want 4", len(recs))
	}
	for slug, r := range recs {
		if r["sandbox"] != "docker" || r["status"] != "completed" {
			t.Fatalf("%s: sandbox %v status %v: %v %v", slug, r["sandbox"], r["status"], r["error"], r["finalize_error"])
		}
	}
	p.keys("n")
	p.waitText("in the accept", 30*time.Second)
	time.Sleep(time.Second)
	p.keys("a")
	// The accept's own message: the review's header says "accepted" as
	// soon as the verdict is recorded.
	p.waitFor("the accept's message", 60*time.Second, func(s string) bool {
		return strings.Contains(s, "accepted ") && !strings.Contains(s, "Review ")
	})
	for slug, r := range records(t, home) {
		if r["verdict"] != "accept" {
			continue
		}
		tip, err := e2eGit(t, r["repo"].(string), "rev-parse", r["branch"].(string))
		if err != nil || tip != r["accepted_commit"] || tip == r["base_commit"] {
			t.Fatalf("%s: branch tip %s (%v), accepted %v", slug, tip, err, r["accepted_commit"])
		}
		if secs, ok := r["review_seconds"].(float64); !ok || secs < 1 {
			t.Fatalf("%s: review_seconds %v", slug, r["review_seconds"])
		}
		p.keys("q")
		p.waitText("[exited 0]", 20*time.Second)
		return
	}
	t.Fatal("no run.json records the accept")
}
