package seal

import (
	"slices"

	"github.com/dirtywork/dirtywork/transcript"
)

// Evidence adds to a run's result fields what its seals found: the
// repositories quarantined, the special files and links taken out (and
// the escaping links that stayed), the paths too long to export, the
// ignored entries and the mode changes. Lists already there (the
// export's own findings) are kept, and each list comes out sorted,
// without repeats.
func Evidence(a *transcript.Artifacts, r Report) {
	a.DroppedGitEntries = union(a.DroppedGitEntries, r.Repositories)
	a.SkippedSpecialEntries = union(a.SkippedSpecialEntries, r.Special)
	var links []string
	for _, l := range append(slices.Clone(r.Links), r.KeptLinks...) {
		links = append(links, l.Path)
	}
	a.EscapingSymlinks = union(a.EscapingSymlinks, links)
	a.UnexportedEntries = union(a.UnexportedEntries, r.Long)
	a.IgnoredChanges = append(a.IgnoredChanges, r.Ignored...)
	a.ModeChanges = append(a.ModeChanges, r.Modes...)
}

// union is a and b merged, sorted, without repeats; never nil.
func union(a, b []string) []string {
	out := append(append([]string{}, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}
