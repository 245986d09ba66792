package main

import (
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
