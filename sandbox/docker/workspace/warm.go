package workspace

import (
	"context"
	"fmt"
)

// WarmToolbox makes the tool server's volume for cfg's image ready on the
// daemon connect gives, as the start of a run would (filling it when it
// is missing or of another build), without making a run. A bench sweep
// warms each engine before its first case, so that one-time fill is the
// sweep's set-up rather than a case's cost.
func WarmToolbox(ctx context.Context, connect Connect, cfg Config) error {
	if cfg.Toolbox == nil {
		return fmt.Errorf("%w: no tool server source is configured", ErrNoToolbox)
	}
	cl, err := connect()
	if err != nil {
		return err
	}
	defer func() { _ = cl.Close() }() // idle connections only
	img, err := cl.InspectImage(ctx, cfg.Image)
	if err != nil {
		return imageError(cfg.Image, err)
	}
	tb, err := imageToolbox(cfg, img)
	if err != nil {
		return err
	}
	w := &Workspace{cfg: cfg, eng: cl, imageID: img.ID, arch: img.Arch, toolbox: tb}
	return w.prepareToolbox(ctx)
}
