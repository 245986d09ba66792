package gitops

import (
	"slices"
	"testing"
)

func TestArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args *Args
		want []string
	}{
		{"plain", NewArgs("status").Arg("--porcelain", "-z"), []string{"status", "--porcelain", "-z"}},
		{"condition true", NewArgs("worktree", "add").ArgIf(true, "--no-checkout").Arg("--", "p", "b"), []string{"worktree", "add", "--no-checkout", "--", "p", "b"}},
		{"condition false", NewArgs("worktree", "add").ArgIf(false, "--no-checkout").Arg("--", "p", "b"), []string{"worktree", "add", "--", "p", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.args.Strings(); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestArgsStringsIsACopy(t *testing.T) {
	t.Parallel()
	a := NewArgs("log")
	got := a.Strings()
	got[0] = "changed"
	if a.Strings()[0] != "log" {
		t.Error("Strings exposes the builder's slice")
	}
}
