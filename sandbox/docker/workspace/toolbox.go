package workspace

import (
	"errors"
	"fmt"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// ErrNoToolbox: there is no tool server for the worker image's platform,
// so no run can start on it. The tool server is a Linux build of dirtywork
// of the image's architecture; a build of dirtywork that is not one has to
// carry it.
var ErrNoToolbox = errors.New("no tool server for the image's platform")

// Toolbox is the tool server delivered into the container: a Linux build
// of dirtywork for the image's architecture, either a file on this machine
// (Path, the running binary when it is such a build) or bytes in memory
// (Data, a build this binary carries). Exactly one is set.
type Toolbox struct {
	Path string
	Data []byte
}

// ToolboxSource gives the tool server for goarch, the worker image's
// architecture as Go names it ("amd64", "arm64"). An error that wraps
// ErrNoToolbox means this build of dirtywork has none for it.
type ToolboxSource func(goarch string) (Toolbox, error)

// imageToolbox is the tool server for img, asked of cfg.Toolbox with the
// image's architecture. Every refusal names the image and its platform.
func imageToolbox(cfg Config, img daemon.Image) (Toolbox, error) {
	platform := "linux/" + img.Arch
	switch {
	case img.OS != "" && img.OS != "linux":
		return Toolbox{}, fmt.Errorf("%w: image %s is for %s/%s, and the tool server runs on Linux only",
			ErrNoToolbox, cfg.Image, img.OS, img.Arch)
	case img.Arch == "":
		return Toolbox{}, fmt.Errorf("%w: the docker daemon reports no architecture for image %s", ErrNoToolbox, cfg.Image)
	case cfg.Toolbox == nil:
		return Toolbox{}, fmt.Errorf("%w: none is configured for image %s (%s)", ErrNoToolbox, cfg.Image, platform)
	}
	tb, err := cfg.Toolbox(img.Arch)
	if err != nil {
		return Toolbox{}, fmt.Errorf("tool server for image %s (%s): %w", cfg.Image, platform, err)
	}
	if (tb.Path != "") == (len(tb.Data) > 0) {
		return Toolbox{}, fmt.Errorf("tool server for image %s (%s): the source gave %s, want exactly one of a path and data",
			cfg.Image, platform, tb.describe())
	}
	return tb, nil
}

// describe says which of the two a Toolbox holds, for errors.
func (t Toolbox) describe() string {
	switch {
	case t.Path != "" && len(t.Data) > 0:
		return "both a path and data"
	case t.Path != "":
		return "path " + t.Path
	case len(t.Data) > 0:
		return fmt.Sprintf("%d bytes", len(t.Data))
	}
	return "neither a path nor data"
}
