//go:build linux

package jail

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helperEnv names the helper a test binary started inside a jail runs
// instead of the tests.
const helperEnv = "JAILTEST_HELPER"

func TestMain(m *testing.M) {
	MaybeRun()
	if name := os.Getenv(helperEnv); name != "" {
		os.Exit(runHelper(name, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// helperPath is where the test binary is bound inside a jail.
const helperPath = "/jailtest/helper"

// result is what a jail's program did.
type result struct {
	out, stderr string
	err         error
	info        Info
}

// runJail starts cfg, feeds it nothing, collects both streams and waits,
// within a liveness bound.
func runJail(t *testing.T, cfg Config) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	j, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start the jail: %v", err)
	}
	_ = j.Stdin.Close() // the program reads end of file
	var stderr bytes.Buffer
	errDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(&stderr, j.Stderr)
		close(errDone)
	}()
	outCh := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(j.Stdout)
		outCh <- b
	}()
	var out []byte
	select {
	case out = <-outCh:
	case <-ctx.Done():
		_ = j.Kill()
		out = <-outCh
		t.Errorf("the jail's program did not end in time")
	}
	<-errDone
	werr := j.Wait()
	return result{out: string(out), stderr: stderr.String(), err: werr, info: j.Info()}
}

// script is a config running bash -c s.
func script(s string) Config {
	return Config{
		Path: "/bin/bash", Args: []string{"bash", "-c", s},
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG=C"},
	}
}

// bash runs s in a jail of cfg (its Path and Args replaced) and returns
// its result.
func bash(t *testing.T, cfg Config, s string) result {
	t.Helper()
	sc := script(s)
	cfg.Path, cfg.Args = sc.Path, sc.Args
	if cfg.Env == nil {
		cfg.Env = sc.Env
	}
	return runJail(t, cfg)
}

// withHelper adds the test binary to cfg, so scripts can run helpers as
// `helper NAME ARGS...`.
func withHelper(t *testing.T, cfg Config) Config {
	t.Helper()
	cfg.Mounts = append(cfg.Mounts, Mount{Source: helperBinary(t), Target: helperPath, ReadOnly: true})
	return cfg
}

// helper runs the named helper in a jail of cfg (with the test binary
// added) and returns its output lines as "key value" pairs.
func helper(t *testing.T, cfg Config, name string, args ...string) map[string]string {
	t.Helper()
	cfg = withHelper(t, cfg)
	cfg.Path, cfg.Args = helperPath, append([]string{"helper"}, args...)
	cfg.Env = append(cfg.Env, helperEnv+"="+name)
	r := runJail(t, cfg)
	if r.err != nil {
		t.Fatalf("helper %s: %v\n%s%s", name, r.err, r.out, r.stderr)
	}
	got := map[string]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(r.out), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			got[k] = v
		}
	}
	return got
}

// hostFile writes a file of the test's on the host.
func hostFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// lines is s's lines, trimmed.
func lines(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func describe(r result) string {
	return fmt.Sprintf("err %v\nstdout:\n%s\nstderr:\n%s", r.err, r.out, r.stderr)
}
