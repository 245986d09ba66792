package gitops

import (
	"slices"
	"testing"
)

func TestParseStatusZ(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"empty", "", []string{}},
		{"untracked and modified", "?? f.txt\x00 M g.txt\x00", []string{"?? f.txt", " M g.txt"}},
		{"names with spaces and newlines stay whole", "?? a b\x00?? c\nd\x00", []string{"?? a b", "?? c\nd"}},
		{"rename carries its source", "R  new.txt\x00old.txt\x00 D gone\x00", []string{"R  old.txt -> new.txt", " D gone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseStatusZ([]byte(tt.in)); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseWorktreeListZ(t *testing.T) {
	t.Parallel()
	in := "worktree /repo\x00HEAD aaa\x00branch refs/heads/main\x00\x00" +
		"worktree /repo/.worktrees/dw-x\x00HEAD bbb\x00detached\x00locked\x00\x00" +
		"worktree /gone\x00HEAD ccc\x00branch refs/heads/dirtywork/y\x00prunable gitdir file points to non-existent location\x00\x00"
	want := []worktreeEntry{
		{Path: "/repo", Head: "aaa", Branch: "refs/heads/main"},
		{Path: "/repo/.worktrees/dw-x", Head: "bbb", Detached: true, Locked: true},
		{Path: "/gone", Head: "ccc", Branch: "refs/heads/dirtywork/y", Prunable: true},
	}
	if got := parseWorktreeListZ([]byte(in)); !slices.Equal(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}
