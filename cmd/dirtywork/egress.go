package main

import (
	"github.com/spf13/cobra"

	"github.com/dirtywork/dirtywork/sandbox/egress"
)

// newEgressCmd is what a docker sandbox runs of the egress proxy: the
// sidecar that serves it ('__egress proxy') and the forwarder a --setup
// command runs under ('__egress run'). Hidden from the help.
func newEgressCmd(io *streams) *cobra.Command {
	return &cobra.Command{
		Use:                "__egress",
		Short:              "Serve the egress proxy, or run a command that reaches it (used by the docker sandbox)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			if code := egress.Main(c.Context(), args, io.in, io.out, io.errOut); code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
}
