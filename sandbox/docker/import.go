package docker

import (
	"context"
	"fmt"
	"io"

	"github.com/docker/docker/api/types/image"
)

// pathEnv is the PATH every container gets (the contract's C-4). An
// imported root filesystem has no configuration at all, so the image
// records it.
const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ImportImage creates the image tag from rootfs, a tar stream of a root
// filesystem, and returns its Id. The daemon's messages go to progress.
// The transfer runs under TransferTimeout.
func (c *Client) ImportImage(ctx context.Context, tag string, rootfs io.Reader, progress io.Writer) (string, error) {
	if err := CheckReference(tag); err != nil {
		return "", err
	}
	var id string
	err := call(ctx, "import image "+tag, TransferTimeout, func(ctx context.Context) error {
		body, err := c.api.ImageImport(ctx, image.ImportSource{Source: rootfs, SourceName: "-"}, tag, image.ImportOptions{
			Message: "dirtywork: imported root filesystem",
			Changes: []string{"ENV " + pathEnv},
		})
		if err != nil {
			return err
		}
		defer func() { _ = body.Close() }() // a response body; nothing to lose
		res, err := copyProgress(body, progress)
		id = res.ID
		return err
	})
	if err != nil {
		return "", err
	}
	if id == "" {
		// Not every engine ends the stream with the Id; the tag says.
		if id, _, err = c.ImageExists(ctx, tag); err != nil {
			return "", fmt.Errorf("find the image just imported: %w", err)
		}
	}
	return id, nil
}
