package export

import "strings"

// nodeKind is what a name in the tree is.
type nodeKind uint8

const (
	dirNode nodeKind = iota
	fileNode
	linkNode
	// hardlinkNode is a hard link to an earlier regular file member.
	hardlinkNode
)

// node is one name in the tree the accepted members make, directories a
// member implies included. It lets the validator tell, without a
// filesystem, whether a member would collide with or pass through an
// earlier one, so Validate refuses exactly what Extract would.
type node struct {
	kind     nodeKind
	children map[string]*node
	// target is a symlink's target, or a hard link's regular file member.
	target string
	// sniffed is set for a regular file whose text was judged as a git
	// config, configHit when it makes its directory a repository's.
	sniffed, configHit bool
}

// placement is where a member goes in the tree.
type placement struct {
	// newDirs are the directories above the member that no earlier member
	// made or implied, outermost first; they must be created before it.
	newDirs []string
	// exists is set for a directory member naming a directory that is
	// already there (mkdir -p accepts it).
	exists bool
	// node is the member's node in the tree.
	node *node
}

// place records a member of kind k whose name (raw, for messages) has
// the components parts. Walking the components one map lookup each keeps
// the cost linear in the name's length, however deep it goes.
func (t *node) place(raw string, parts []string, k nodeKind) (placement, *Refusal) {
	var pl placement
	n := t
	for i, p := range parts[:len(parts)-1] {
		child := n.children[p]
		if child == nil {
			child = &node{kind: dirNode}
			if n.children == nil {
				n.children = make(map[string]*node)
			}
			n.children[p] = child
			pl.newDirs = append(pl.newDirs, strings.Join(parts[:i+1], "/"))
		}
		switch child.kind {
		case linkNode:
			link := strings.Join(parts[:i+1], "/")
			return pl, refuse(ErrThroughSymlink, raw,
				"%s escapes the destination via a symlink created by an earlier member (%s)", quoted(raw), quoted(link))
		case fileNode, hardlinkNode:
			file := strings.Join(parts[:i+1], "/")
			return pl, refuse(ErrExtraction, raw,
				"export extraction failed: %s lies under %s, which an earlier member made a file", quoted(raw), quoted(file))
		}
		n = child
	}
	last := parts[len(parts)-1]
	if have := n.children[last]; have != nil {
		if have.kind == dirNode && k == dirNode {
			pl.exists, pl.node = true, have
			return pl, nil
		}
		return pl, refuse(ErrExtraction, raw, "export extraction failed: duplicate member %s", quoted(raw))
	}
	if n.children == nil {
		n.children = make(map[string]*node)
	}
	pl.node = &node{kind: k}
	n.children[last] = pl.node
	return pl, nil
}

// lookup is the node at parts, nil when there is none; nothing is
// followed.
func (t *node) lookup(parts []string) *node {
	n := t
	for _, p := range parts {
		if n = n.children[p]; n == nil {
			return nil
		}
	}
	return n
}
