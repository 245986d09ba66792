package engine

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox/docker/workspace"
	"github.com/dirtywork/dirtywork/sandbox/toolbox/carried"
)

// toolboxChooser picks the container's tool server for the worker image's
// architecture. The tool server is always a build of this very version,
// so it speaks this version's protocol: the running binary when it is a
// Linux build of the image's architecture, else a Linux build it carries.
type toolboxChooser struct {
	goos, goarch string
	executable   func() (string, error)
	// carried and carriedArches are the builds this binary carries.
	carried       func(goarch string) ([]byte, bool)
	carriedArches func() []string
}

// hostToolbox chooses for this binary.
var hostToolbox = toolboxChooser{
	goos: runtime.GOOS, goarch: runtime.GOARCH, executable: os.Executable,
	carried: carried.Binary, carriedArches: carried.Arches,
}

// toolbox is the tool server for an image of goarch, or an error wrapping
// workspace.ErrNoToolbox that says what this build carries instead.
func (c toolboxChooser) toolbox(goarch string) (workspace.Toolbox, error) {
	if c.goos == "linux" && goarch == c.goarch {
		exe, err := c.executable()
		if err != nil {
			return workspace.Toolbox{}, fmt.Errorf("find this program's binary for the container's tool server: %w", err)
		}
		return workspace.Toolbox{Path: exe}, nil
	}
	if data, ok := c.carried(goarch); ok {
		return workspace.Toolbox{Data: data}, nil
	}
	carries := "carries no Linux builds"
	if arches := c.carriedArches(); len(arches) > 0 {
		carries = "carries Linux builds for " + strings.Join(arches, ", ") + " only"
	}
	return workspace.Toolbox{}, fmt.Errorf("%w: this %s/%s build of dirtywork %s", workspace.ErrNoToolbox, c.goos, c.goarch, carries)
}

// noToolboxHint is the fix for workspace.ErrNoToolbox on a goos/goarch host:
// the command, run in a checkout of dirtywork, that makes a build carrying
// the Linux tool servers, and the binary it makes.
func noToolboxHint(goos, goarch string) string {
	build := "task build:carry build (then run bin/dirtywork)"
	if goos == "darwin" {
		build = "task build:darwin (then run bin/dirtywork-darwin-" + goarch + ")"
	}
	return "make a dirtywork that carries the Linux tool servers, in its checkout: " + build + "; or " + hostModeHint
}
