package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	workerimage "github.com/dirtywork/dirtywork/docker"
	"github.com/dirtywork/dirtywork/sandbox/docker"
)

// newImageCmd is `dirtywork image`: the docker sandbox's worker image.
func newImageCmd(io *streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the docker worker image",
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				return withHint(fmt.Errorf("unknown image command %q", args[0]), "see 'dirtywork image --help'")
			}
			return withHint(errors.New("image needs a command: build"), "see 'dirtywork image --help'")
		},
	}
	cmd.AddCommand(newImageBuildCmd(io))
	return cmd
}

// imageBuild is what `image build` was asked to do.
type imageBuild struct {
	tag       string
	bootstrap bool
}

// imageBuilt is the JSON object `image build` prints on stdout.
type imageBuilt struct {
	Image string `json:"image"`
	ID    string `json:"id"`
	Base  string `json:"base"`
}

func newImageBuildCmd(io *streams) *cobra.Command {
	var spec imageBuild
	cmd := &cobra.Command{
		Use:   "build [--tag T] [--bootstrap-base]",
		Short: "Build the worker image through the Docker Engine API",
		Long: `Builds the worker image from the Dockerfile embedded in this binary (the
repository's docker/Dockerfile) through the Docker Engine API; no docker CLI is
needed. The daemon is DOCKER_HOST's, else the docker CLI's current context's,
else the default socket's.

The image is built on ` + workerimage.BaseImage + ` when that exists locally, else on
` + workerimage.RegistryBase + ` from the registry. Where no registry is reachable,
--bootstrap-base first makes ` + workerimage.BaseImage + ` with debootstrap (as root, with
debootstrap installed; about a minute) and imports it. Build output goes to
stderr; stdout gets one JSON object {image, id, base}.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runImageBuild(c.Context(), io, spec)
		},
	}
	f := cmd.Flags()
	f.StringVar(&spec.tag, "tag", workerimage.DefaultImage(Version()), "name:tag of the image to build")
	f.BoolVar(&spec.bootstrap, "bootstrap-base", false,
		"make the Debian base with debootstrap and import it first (needs root; for machines without a registry)")
	return cmd
}

func runImageBuild(ctx context.Context, io *streams, spec imageBuild) error {
	if err := docker.CheckReference(spec.tag); err != nil {
		return withHint(err, "--tag takes an image name such as "+workerimage.DefaultImage("v1.2.3"))
	}
	cl, err := connectDocker(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }() // idle connections only

	base := workerimage.BaseImage
	if spec.bootstrap {
		fmt.Fprintf(io.errOut, "dirtywork: making %s with debootstrap\n", base)
		baseID, err := cl.BootstrapBase(ctx, base, io.errOut)
		if err != nil {
			return bootstrapError(err, spec)
		}
		fmt.Fprintf(io.errOut, "dirtywork: imported %s as %s\n", base, baseID)
	} else if _, _, err := cl.ImageExists(ctx, base); errors.Is(err, docker.ErrNotFound) {
		base = workerimage.RegistryBase
	} else if err != nil {
		return err
	}
	fmt.Fprintf(io.errOut, "dirtywork: building %s on %s\n", spec.tag, base)
	id, err := cl.BuildImage(ctx, docker.BuildSpec{Tag: spec.tag, Base: base}, io.errOut)
	if err != nil {
		if base == workerimage.RegistryBase && errors.Is(err, docker.ErrStreamFailed) {
			return withHint(err, "where no container registry is reachable, build on a base made here: "+
				imageBuildCommand(spec.tag, true))
		}
		return err
	}
	return writeJSON(io.out, imageBuilt{Image: spec.tag, ID: id, Base: base})
}

// connectDocker finds the daemon and checks that it answers, so that every
// docker command fails the same way, early, when it does not.
func connectDocker(ctx context.Context) (*docker.Client, error) {
	cl, err := docker.Connect()
	if err != nil {
		return nil, withHint(err, "set DOCKER_HOST, or select a working context with 'docker context use'")
	}
	if _, err := cl.ServerVersion(ctx); err != nil {
		_ = cl.Close() // idle connections only
		if errors.Is(err, docker.ErrDaemonUnreachable) || errors.Is(err, docker.ErrTimedOut) {
			return nil, withHint(fmt.Errorf("%w: %w", docker.ErrDaemonUnreachable, err),
				"start the Docker daemon, or point DOCKER_HOST at one that runs; without docker, use --sandbox none")
		}
		return nil, err
	}
	return cl, nil
}

// bootstrapError adds the fix to BootstrapBase's refusals.
func bootstrapError(err error, spec imageBuild) error {
	switch {
	case errors.Is(err, docker.ErrNeedsRoot):
		return withHint(err, "run it as root: sudo "+imageBuildCommand(spec.tag, true))
	case errors.Is(err, docker.ErrNoDebootstrap):
		return withHint(err, "install it (on Debian or Ubuntu: apt-get install debootstrap), then run: "+
			imageBuildCommand(spec.tag, true))
	}
	return err
}

// imageBuildCommand is the exact command that builds image: --tag only
// when it is not this version's default.
func imageBuildCommand(image string, bootstrap bool) string {
	cmd := []string{"dirtywork", "image", "build"}
	if image != workerimage.DefaultImage(Version()) {
		cmd = append(cmd, "--tag", shellQuote(image))
	}
	if bootstrap {
		cmd = append(cmd, "--bootstrap-base")
	}
	return strings.Join(cmd, " ")
}

// imageMissingHint is the hint of the preflight error for a missing worker
// image: the command that builds it.
func imageMissingHint(image string) string {
	return "build it with: " + imageBuildCommand(image, false) +
		" (where no container registry is reachable: " + imageBuildCommand(image, true) + ")"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, needsQuoting) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// needsQuoting reports whether r is special to a shell; image references
// are made of letters, digits and "-_.:/@".
func needsQuoting(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return false
	}
	return !strings.ContainsRune("-_.:/@", r)
}
