package export

import (
	"io"
)

// LeftOut is a member Salvage did not write, and why, in the words a
// refusal of the whole stream would have used.
type LeftOut struct {
	Name, Reason string
}

// Salvaged is what Salvage left out of what it wrote.
type Salvaged struct {
	// LeftOut are the members not written, in archive order (at most
	// 1000); LeftOutCount counts them all.
	LeftOut      []LeftOut
	LeftOutCount int
}

// salvage is a walk's record of what it left out, and how it takes back
// a member whose write failed half way.
type salvage struct {
	Salvaged
	lane *lane
}

func (s *salvage) leaveOut(name string, ref *Refusal) {
	s.LeftOutCount++
	if len(s.LeftOut) < maxListed {
		s.LeftOut = append(s.LeftOut, LeftOut{Name: name, Reason: ref.Reason})
	}
}

// undo removes what a failed write left at name, nothing followed.
func (s *salvage) undo(name string) {
	_ = s.lane.remove(name) // what stays is listed as left out either way
}

// Salvage writes into dest, which must hold nothing but its .git file,
// every member of the tar stream r that Extract would write, as Extract
// writes it; a member for which Extract would refuse the whole stream
// (a name no member may have, a path through a symlink or a file, a type
// it takes for no file, a member past either cap, a write that failed) is
// left out and listed instead, and the walk goes on. It is for a tree the
// export refuses, to keep what can be kept of it: the stream has no byte
// cap of its own (caps bound what is written), the Summary covers what was
// written, and on an error (the stream broke, or dest is not as it must
// be) what was written stays.
func Salvage(r io.Reader, dest string, caps Caps) (Summary, Salvaged, error) {
	l, err := openLane(dest)
	if err != nil {
		return Summary{}, Salvaged{}, failed("", err, "open worktree")
	}
	defer func() { _ = l.Close() }()
	if ref := onlyGitFile(l); ref != nil {
		return Summary{}, Salvaged{}, ref
	}
	sv := &salvage{lane: l}
	sum, err := walkWith(r, caps, newWriter(l).put, sv)
	return sum, sv.Salvaged, err
}
