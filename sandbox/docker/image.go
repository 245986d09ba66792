package docker

import (
	"context"
	"errors"
	"strings"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
)

// ImageExists resolves ref to the local image's Id (sha256:<64 hex>), for
// preflight: the Id, not the name, is what every container is then made
// from, so nothing is ever pulled implicitly. digest is the registry digest
// the image was pulled by (the first RepoDigests entry for ref's
// repository, as name@sha256:…), or nil for a locally built image, which
// has none. A missing image is ErrNotFound.
func (c *Client) ImageExists(ctx context.Context, ref string) (id string, digest *string, err error) {
	img, err := c.InspectImage(ctx, ref)
	return img.ID, img.Digest, err
}

// InspectImage is ImageExists with the image's platform.
func (c *Client) InspectImage(ctx context.Context, ref string) (daemon.Image, error) {
	var f daemon.Image
	err := query(ctx, "inspect image "+ref, func(ctx context.Context) error {
		img, err := c.api.ImageInspect(ctx, ref)
		if err != nil {
			return err
		}
		if img.ID == "" {
			return errors.New("the daemon reported no image Id")
		}
		f.ID, f.OS, f.Arch = img.ID, img.Os, img.Architecture
		prefix := repositoryOf(ref) + "@sha256:"
		for _, d := range img.RepoDigests {
			if strings.HasPrefix(d, prefix) {
				f.Digest = &d
				break
			}
		}
		return nil
	})
	if err != nil {
		return daemon.Image{}, err
	}
	return f, nil
}

// repositoryOf is ref without its digest and tag: a ":" is a tag separator
// only after the last "/", so localhost:5000/foo:tag is localhost:5000/foo.
func repositoryOf(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	slash := strings.LastIndex(name, "/")
	if colon := strings.LastIndex(name, ":"); colon > slash {
		name = name[:colon]
	}
	return name
}
