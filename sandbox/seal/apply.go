package seal

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// apply takes out what the scan queued and strips setuid and setgid
// bits. A path under one already taken out is skipped.
func (w *walker) apply() error {
	if len(w.removals) == 0 && len(w.strips) == 0 {
		return nil
	}
	root, err := os.OpenRoot(w.path)
	if err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	defer func() { _ = root.Close() }() // a directory opened for reading
	slices.SortFunc(w.removals, func(a, b removal) int { return strings.Compare(a.rel, b.rel) })
	var last string
	for _, r := range w.removals {
		if last != "" && strings.HasPrefix(r.rel, last+"/") {
			continue
		}
		if err := removeAll(root, r.rel); err != nil {
			return err
		}
		w.manifest.dropUnder(r.rel)
		last = r.rel
	}
	for _, s := range w.strips {
		if err := root.Chmod(s.rel, os.FileMode(s.mode&0o777)); err != nil {
			return fmt.Errorf("seal: clear the setuid and setgid bits of %s: %w", quote(s.rel), err)
		}
	}
	return nil
}

// sortReport sorts every list of the report by path.
func (w *walker) sortReport() {
	slices.Sort(w.report.Repositories)
	slices.Sort(w.report.Special)
	slices.Sort(w.report.Long)
	byPath := func(a, b Link) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(w.report.Links, byPath)
	slices.SortFunc(w.report.KeptLinks, byPath)
	slices.SortStableFunc(w.report.Ignored, func(a, b ignoredChange) int { return strings.Compare(a.Path, b.Path) })
	slices.SortStableFunc(w.report.Modes, func(a, b modeChange) int { return strings.Compare(a.Path, b.Path) })
	r := &w.report
	r.Omitted += capped(&r.Repositories) + capped(&r.Special) + capped(&r.Long) + capped(&r.Links) +
		capped(&r.KeptLinks) + capped(&r.Ignored) + capped(&r.Modes)
}

// maxListed bounds each list of a Report: a reply and a record stay a
// sane size whatever the worker made (what is taken out is taken out
// whether it is listed or not).
const maxListed = 1000

// capped cuts *l to maxListed entries and returns how many it cut.
func capped[T any](l *[]T) int {
	if len(*l) <= maxListed {
		return 0
	}
	n := len(*l) - maxListed
	*l = (*l)[:maxListed:maxListed]
	return n
}
