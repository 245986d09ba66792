package main

import (
	"os"

	"github.com/dirtywork/dirtywork/engine/provider/scripted"
	"github.com/spf13/cobra"
)

// newDevCmd holds tools for developing and testing dirtywork and the
// orchestrations around it. It is hidden from the main help.
func newDevCmd(io *streams) *cobra.Command {
	dev := &cobra.Command{
		Use:    "dev",
		Short:  "Tools for testing dirtywork and orchestrations built on it",
		Hidden: true,
		RunE: func(c *cobra.Command, _ []string) error {
			return usageErrorf("'dirtywork dev' needs a subcommand; see 'dirtywork dev --help'")
		},
	}
	dev.AddCommand(newModelServerCmd(io))
	return dev
}

func newModelServerCmd(io *streams) *cobra.Command {
	var scriptPath, addr, logPath string
	cmd := &cobra.Command{
		Use:   "model-server --script FILE [--addr HOST:PORT] [--log FILE]",
		Short: "Serve a scripted OpenAI-compatible model (no real model)",
		Long: `Serves an OpenAI-compatible chat-completions API that replays the assistant
turns of a script: turn k answers a request whose history holds k assistant
messages. Prints one JSON line {"base_url": ..., "model": ...} on stdout once
it listens, then serves until interrupted. --log appends every request as a
JSON line.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if scriptPath == "" {
				return usageErrorf("--script is required")
			}
			script, err := scripted.LoadScript(scriptPath)
			if err != nil {
				return usageErrorf("%v", err)
			}
			srv := scripted.New(script)
			if logPath != "" {
				f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
				if err != nil {
					return usageErrorf("open request log: %v", err)
				}
				defer func() { _ = f.Close() }()
				srv.LogTo = f
			}
			base, err := srv.Start(addr)
			if err != nil {
				return usageErrorf("%v", err)
			}
			defer func() { _ = srv.Close() }()
			// A reader gone away does not stop the server: it serves whoever
			// learned the address.
			_ = writeJSON(io.out, map[string]string{"base_url": base, "model": script.ModelID()})
			<-c.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&scriptPath, "script", "", "the script (JSON) to replay")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "address to listen on (port 0 picks a free one)")
	cmd.Flags().StringVar(&logPath, "log", "", "append every request to this file as JSON lines")
	return cmd
}
