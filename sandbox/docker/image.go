package docker

import (
	"context"
	"errors"
	"strings"
)

// ImageExists resolves ref to the local image's Id (sha256:<64 hex>), for
// preflight: the Id, not the name, is what every container is then made
// from, so nothing is ever pulled implicitly. digest is the registry digest
// the image was pulled by (the first RepoDigests entry for ref's
// repository, as name@sha256:…), or nil for a locally built image, which
// has none. A missing image is ErrNotFound.
func (c *Client) ImageExists(ctx context.Context, ref string) (id string, digest *string, err error) {
	img, err := c.inspectImage(ctx, ref)
	return img.id, img.digest, err
}

// imageFacts is what a run needs to know of its image: ImageExists's id
// and digest, and the platform its tool server has to be built for.
type imageFacts struct {
	id       string
	digest   *string
	os, arch string // as Go names them: "linux", "amd64"
}

// inspectImage is ImageExists with the image's platform.
func (c *Client) inspectImage(ctx context.Context, ref string) (imageFacts, error) {
	var f imageFacts
	err := query(ctx, "inspect image "+ref, func(ctx context.Context) error {
		img, err := c.api.ImageInspect(ctx, ref)
		if err != nil {
			return err
		}
		if img.ID == "" {
			return errors.New("the daemon reported no image Id")
		}
		f.id, f.os, f.arch = img.ID, img.Os, img.Architecture
		prefix := repositoryOf(ref) + "@sha256:"
		for _, d := range img.RepoDigests {
			if strings.HasPrefix(d, prefix) {
				f.digest = &d
				break
			}
		}
		return nil
	})
	if err != nil {
		return imageFacts{}, err
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
