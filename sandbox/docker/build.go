package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docker/docker/api/types/build"

	workerimage "github.com/dirtywork/dirtywork/docker"
)

// BuildSpec says which worker image to build.
type BuildSpec struct {
	// Tag is the reference the built image gets, such as
	// dirtywork-worker:v1.2.3.
	Tag string
	// Base is the image the Dockerfile starts FROM; "" keeps its default,
	// workerimage.BaseImage.
	Base string
}

// BuildImage builds the worker image from the Dockerfile embedded in the
// binary (package workerimage) and returns its Id. The build context is
// that one file, made in memory, so a build needs no checkout. The daemon's
// output goes to progress as plain lines; a step that fails fails the build
// with the daemon's text (ErrStreamFailed). The whole build runs under
// BuildTimeout.
func (c *Client) BuildImage(ctx context.Context, spec BuildSpec, progress io.Writer) (string, error) {
	if err := CheckReference(spec.Tag); err != nil {
		return "", err
	}
	buildCtx, err := buildContext(workerimage.Dockerfile())
	if err != nil {
		return "", err
	}
	opts := build.ImageBuildOptions{
		Tags:       []string{spec.Tag},
		Dockerfile: "Dockerfile",
		// The classic builder: BuildKit over the API needs a session the
		// plain Engine API client does not offer, and this Dockerfile
		// needs nothing BuildKit adds.
		Version:     build.BuilderV1,
		Remove:      true,
		ForceRemove: true,
	}
	if spec.Base != "" {
		base := spec.Base
		opts.BuildArgs = map[string]*string{workerimage.BaseArg: &base}
	}
	err = call(ctx, "build image "+spec.Tag, BuildTimeout, func(ctx context.Context) error {
		resp, err := c.api.ImageBuild(ctx, bytes.NewReader(buildCtx), opts)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }() // a response body; nothing to lose
		_, err = copyProgress(resp.Body, progress)
		return err
	})
	if err != nil {
		return "", err
	}
	// The tag, not the stream, is the proof: older daemons report the Id
	// only as text, and a build that "succeeded" without tagging is a
	// failure.
	id, _, err := c.ImageExists(ctx, spec.Tag)
	if err != nil {
		return "", fmt.Errorf("find the image just built: %w", err)
	}
	return id, nil
}

// contextModTime is the fixed modification time of the build context's
// files, so the same Dockerfile always makes the same context.
var contextModTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// buildContext returns the tar build context holding exactly one file,
// Dockerfile, with the given content.
func buildContext(dockerfile string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     "Dockerfile",
		Mode:     0o644,
		Size:     int64(len(dockerfile)),
		ModTime:  contextModTime,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, fmt.Errorf("write build context: %w", err)
	}
	if _, err := io.WriteString(tw, dockerfile); err != nil {
		return nil, fmt.Errorf("write build context: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("write build context: %w", err)
	}
	return buf.Bytes(), nil
}
