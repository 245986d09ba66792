package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dirtywork/dirtywork/sandbox/toolbox/carried"
)

// newVersionCmd prints what this build is: its version, the toolchain and
// platform it was built for, and the Linux tool servers it carries. The
// last line is how a release check (or a user on macOS) learns, without a
// docker run, whether this binary can start a docker sandbox's tool server
// for an image of another platform.
func newVersionCmd(io *streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the platform and the Linux tool servers this build carries",
		Long: `Prints three lines:

  dirtywork VERSION
  GO-VERSION GOOS/GOARCH
  carries Linux tool servers: amd64, arm64   (or: carries no Linux tool servers)

A docker sandbox runs dirtywork's tool server inside the container: a Linux
build sends itself to an image of its own architecture, any other build sends
a Linux build it carries (task build:carry, or a release archive).`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return writeVersion(io.out, Version(), runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH, carried.Arches())
		},
	}
}

// writeVersion writes version's three lines; arches are the carried Linux
// builds' GOARCH values.
func writeVersion(w io.Writer, version, goVersion, platform string, arches []string) error {
	carries := "carries no Linux tool servers"
	if len(arches) > 0 {
		carries = "carries Linux tool servers: " + strings.Join(arches, ", ")
	}
	_, err := fmt.Fprintf(w, "dirtywork %s\n%s %s\n%s\n", version, goVersion, platform, carries)
	return err
}
