package main

import (
	"github.com/dirtywork/dirtywork/sandbox/toolbox"
	"github.com/spf13/cobra"
)

// newToolboxCmd is the tool server a docker sandbox starts inside its
// container. stdout carries only protocol frames, so nothing else may
// print there; it is hidden from the help.
func newToolboxCmd(io *streams) *cobra.Command {
	return &cobra.Command{
		Use:                "toolbox",
		Short:              "Serve tool calls inside a sandbox container (used by the docker sandbox)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if code := toolbox.Main(c.Context(), args, io.in, io.out, io.errOut); code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
}
