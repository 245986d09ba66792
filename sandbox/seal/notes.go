package seal

import (
	"fmt"
	"strings"
)

// Notes are the report as lines for the model: what was taken out of the
// tree, and why; none when nothing was.
func (r Report) Notes() []string {
	var out []string
	add := func(what string, paths []string) {
		if len(paths) > 0 {
			out = append(out, what+": "+strings.Join(capNotes(paths), ", "))
		}
	}
	add("moved out as repositories (nothing that looks like a git repository may reach the lane)", r.Repositories)
	add("FIFOs, sockets and devices removed (no export carries them)", r.Special)
	var links []string
	for _, l := range r.Links {
		links = append(links, l.Path+" -> "+l.Target)
	}
	add("links out of the tree removed", links)
	var ignored []string
	for _, i := range r.Ignored {
		if i.Action == "removed" {
			ignored = append(ignored, i.Path)
		}
	}
	add("git-ignored files you made or changed removed (verify and the review see what git sees)", ignored)
	var stripped []string
	for _, m := range r.Modes {
		if m.Change == "setuid/setgid removed" {
			stripped = append(stripped, m.Path)
		}
	}
	add("setuid/setgid bits cleared", stripped)
	add("paths too long to export removed", r.Long)
	return out
}

// capNotes keeps the first 20 paths of a note.
func capNotes(paths []string) []string {
	if len(paths) <= 20 {
		return paths
	}
	return append(paths[:20:20], fmt.Sprintf("and %d more", len(paths)-20))
}
