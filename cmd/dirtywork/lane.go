package main

import "github.com/spf13/cobra"

func newLaneCmd(io *streams) *cobra.Command {
	return notLanded("lane", "Isolated git worktrees for other workflow engines", "lanes")
}
