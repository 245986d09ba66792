package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// specOf parses args as run's flags and validates them.
func specOf(t *testing.T, args ...string) error {
	t.Helper()
	var f runFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	_, err := f.spec(fs, fs.Args(), nil)
	return err
}

func TestRunSizesAcceptDockersForms(t *testing.T) {
	t.Parallel()
	for _, size := range []string{"512m", "4g", "1.5g", "4gb", "4GB", "2GiB", "1048576"} {
		for _, flag := range []string{"--memory", "--tmp-size", "--gitdir-size"} {
			if err := specOf(t, "--repo", "r", flag, size, "task"); err != nil {
				t.Errorf("%s %s: %v", flag, size, err)
			}
		}
	}
	for _, size := range []string{"lots", "0", "-1g", "4x", ""} {
		err := specOf(t, "--repo", "r", "--memory", size, "task")
		if code, msg, _ := exitCode(err); code != ExitUsage || !strings.Contains(msg, "--memory must be a size such as 512m, 1.5g or 4gb") {
			t.Errorf("--memory %q: exit %d %q", size, code, msg)
		}
	}
}

// TestRunCPUsFlag: --cpus is the sandbox's CPU cap in either mode (docker's
// NanoCPUs, the host jail's cgroup quota), 2 by default; it must be a
// positive finite number.
func TestRunCPUsFlag(t *testing.T) {
	t.Parallel()
	parse := func(args ...string) (float64, error) {
		var f runFlags
		fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		s, err := f.spec(fs, fs.Args(), nil)
		return s.Docker.CPUs, err
	}
	for _, c := range []struct {
		args []string
		want float64
	}{
		{[]string{"--repo", "r", "task"}, 2},
		{[]string{"--repo", "r", "--cpus", "0.5", "task"}, 0.5},
		{[]string{"--repo", "r", "--sandbox", "none", "--cpus", "1.5", "task"}, 1.5},
	} {
		if got, err := parse(c.args...); err != nil || got != c.want {
			t.Errorf("%v: cpus %v, %v; want %v", c.args, got, err, c.want)
		}
	}
	for _, v := range []string{"0", "-1", "NaN", "+Inf"} {
		_, err := parse("--repo", "r", "--cpus", v, "task")
		if code, msg, _ := exitCode(err); code != ExitUsage || !strings.Contains(msg, "--cpus must be a positive number") {
			t.Errorf("--cpus %s: exit %d %q", v, code, msg)
		}
	}
}

func TestAllowHostFlags(t *testing.T) {
	t.Parallel()
	var f runFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse([]string{"--repo", "r", "--allow-host", "a.example,*.b.example:8443", "--allow-host", "[2001:db8::1]:443", "--no-default-hosts", "task"}); err != nil {
		t.Fatal(err)
	}
	s, err := f.spec(fs, fs.Args(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.AllowHosts.Strings(), " "); got != "a.example *.b.example:8443 [2001:db8::1]:443" || !s.NoDefaultHosts {
		t.Fatalf("allow hosts %q, no defaults %v", got, s.NoDefaultHosts)
	}
	for _, bad := range []string{"http://a.example", "a.example:0", "2001:db8::1"} {
		err := specOf(t, "--repo", "r", "--allow-host", bad, "task")
		if code, msg, _ := exitCode(err); code != ExitUsage || !strings.Contains(msg, "--allow-host") {
			t.Errorf("--allow-host %q: exit %d %q", bad, code, msg)
		}
	}
}

func TestAllowHostFromConfigList(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("allow-host = [\"a.example\", \"b.example:8080\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var f runFlags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse([]string{"--repo", "r", "task"}); err != nil {
		t.Fatal(err)
	}
	fromConfig, err := applyDefaults(fs, nil, path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.spec(fs, fs.Args(), fromConfig)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.AllowHosts.Strings(), " "); got != "a.example b.example:8080" {
		t.Fatalf("allow hosts from the config file: %q", got)
	}
	if err := os.WriteFile(path, []byte("allow-host = [\"a.example\", 3]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := applyDefaults(fs, nil, path); err == nil {
		t.Fatal("a list with a number passed")
	}
}
