//go:build docker

package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// privateEngine is a docker engine of the test's own (its own socket,
// data root and bridge), so a test can stop and start it without touching
// the machine's daemon, which other tests use at the same time.
type privateEngine struct {
	t    *testing.T
	host string // its DOCKER_HOST value
	root string
	args []string
	log  *os.File
	// cmd is the running dockerd; exited is closed when it has exited.
	cmd    *exec.Cmd
	exited chan struct{}
}

// startPrivateEngine starts a private engine, loads the worker image into
// it, and stops it and removes everything of it when the test ends.
func startPrivateEngine(t *testing.T) *privateEngine {
	t.Helper()
	root, err := os.MkdirTemp("", "dw-engine2-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// What the daemon left mounted under its root goes before the root.
		if out, err := exec.Command("sh", "-c", "grep -o ' "+root+"[^ ]*' /proc/self/mounts | sort -r | xargs -r -n1 umount -l").CombinedOutput(); err != nil {
			t.Logf("unmount under %s: %v %s", root, err, out)
		}
		if err := os.RemoveAll(root); err != nil {
			t.Errorf("remove the private engine's root: %v", err)
		}
	})
	// A bridge of its own: with --bridge none dockerd deletes docker0,
	// which is the first engine's.
	var rb [3]byte
	_, _ = rand.Read(rb[:])
	bridge := "dwbr" + hex.EncodeToString(rb[:])
	for _, args := range [][]string{
		{"link", "add", bridge, "type", "bridge"},
		{"addr", "add", "10.213." + fmt.Sprint(rb[0]) + ".1/24", "dev", bridge},
		{"link", "set", bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "delete", bridge).CombinedOutput(); err != nil {
			t.Errorf("delete the private engine's bridge: %v\n%s", err, out)
		}
	})
	e := &privateEngine{t: t, root: root, host: "unix://" + filepath.Join(root, "docker.sock")}
	e.args = []string{
		"--host", e.host, "--data-root", filepath.Join(root, "data"),
		"--exec-root", filepath.Join(root, "exec"), "--pidfile", filepath.Join(root, "docker.pid"),
		"--bridge", bridge, "--iptables=false", "--ip6tables=false",
	}
	if e.log, err = os.Create(filepath.Join(root, "dockerd.log")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.stop()
		_ = e.log.Close()
	})
	e.start()
	load := exec.Command("sh", "-c", "docker save \"$1\" | docker -H \"$2\" load", "load", dockerTestImage, e.host)
	load.Env = append(os.Environ(), "DOCKER_HOST="+dockerHost())
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("load the worker image into the private engine: %v\n%s", err, out)
	}
	return e
}

// start starts dockerd and waits until it answers.
func (e *privateEngine) start() {
	e.t.Helper()
	e.cmd = exec.Command("dockerd", e.args...)
	e.cmd.Stdout, e.cmd.Stderr = e.log, e.log
	if err := e.cmd.Start(); err != nil {
		e.t.Fatalf("start a private dockerd: %v", err)
	}
	exited := make(chan struct{})
	e.exited = exited
	cmd := e.cmd
	go func() { _ = cmd.Wait(); close(exited) }()
	waitFor(e.t, func() bool {
		code, _, err := engineRequestAt(e.t.Context(), e.host, http.MethodGet, "/_ping")
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(e.root, "dockerd.log"))
			e.t.Fatalf("the private dockerd exited:\n%s", log)
		default:
		}
		return err == nil && code == http.StatusOK
	})
}

// stop stops dockerd as an operator would (SIGTERM), waiting for it to
// exit; it kills it after a minute. Stopping a stopped engine does nothing.
func (e *privateEngine) stop() {
	if e.cmd == nil {
		return
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
	case <-time.After(time.Minute):
		_ = e.cmd.Process.Kill()
		<-e.exited
	}
	e.cmd = nil
}

// restart stops dockerd and starts it again on the same data root and
// socket: a daemon restart under a run.
func (e *privateEngine) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}
