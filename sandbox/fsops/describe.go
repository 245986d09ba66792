package fsops

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// describeMaxLines is the size past which a change description
	// omits the diff: the counts alone would cost a full diff.
	describeMaxLines = 20000
	// diffContext is the unified diff's context, in lines.
	diffContext = 2
	// maxDiffLines and maxDiffChars bound the diff a description shows.
	maxDiffLines = 40
	maxDiffChars = 3000
	// maxEditCost bounds one Myers search, in inserted plus deleted lines:
	// its time grows with (N+M)·D and its trace with D². Past it the diff
	// falls back to lines that occur once on each side as anchors.
	maxEditCost = 1000
)

// DescribeChange is the result of a tool that changed a file (E-33):
// "<verb> <path>: +A -D", then " (removed N non-blank line|lines)" when
// lines with content were deleted or replaced, then a unified diff with two
// lines of context, cut before 40 lines or 3000 characters with a
// "[diff truncated: N more lines]" line. Lines are compared with their
// endings, split on "\n" only, so a change to the final newline alone
// shows, with git's "\ No newline at end of file" marker. When either side
// has more than 20000 lines only "<verb> <path>: <n> lines (diff omitted:
// file too large)" is returned, n being the new line count.
//
// The edit script is a shortest one (Myers) unless it would take more than
// a thousand inserted and deleted lines; then it is built around lines that
// occur once on each side, which may overstate the change a little.
func DescribeChange(verb, path, before, after string) string {
	if countKeepNewlines(before) > describeMaxLines || countKeepNewlines(after) > describeMaxLines {
		return fmt.Sprintf("%s %s: %d lines (diff omitted: file too large)", verb, path, countKeepNewlines(after))
	}
	a, b := splitKeepNewlines(before), splitKeepNewlines(after)
	ops := diffLines(a, b)
	added, deleted, removed := 0, 0, 0
	for _, op := range ops {
		if op.equal {
			continue
		}
		added += op.j2 - op.j1
		deleted += op.i2 - op.i1
		for _, line := range a[op.i1:op.i2] {
			if !isBlank(line) {
				removed++
			}
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s: +%d -%d", verb, path, added, deleted)
	if removed > 0 {
		fmt.Fprintf(&sb, " (removed %d non-blank %s)", removed, lineWord(removed))
	}
	hunks := groupHunks(ops, diffContext)
	if len(hunks) == 0 {
		return sb.String()
	}
	sb.WriteByte('\n')
	sb.WriteString(renderDiff(path, a, b, hunks))
	return sb.String()
}

func lineWord(n int) string {
	if n == 1 {
		return "line"
	}
	return "lines"
}

// isBlank reports whether line is empty once Python's str.strip() has
// removed its whitespace, which also counts the separators \x1c-\x1f.
func isBlank(line string) bool {
	return strings.TrimFunc(line, func(r rune) bool {
		return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
	}) == ""
}

// diffOp is a stretch of the two line lists: a[i1:i2] against b[j1:j2],
// the same lines when equal, else replaced (deleted, inserted or both).
type diffOp struct {
	equal          bool
	i1, i2, j1, j2 int
}

// diffLines returns the edit from a to b as alternating equal and changed
// stretches covering both lists, in order.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops opList
	ops.add(true, 0, pre, 0, pre)
	x, y := internLines(a[pre:len(a)-suf], b[pre:len(b)-suf])
	at, bt := pre, pre
	for _, m := range matchLines(x, y, maxEditCost) {
		mi, mj := pre+m.i, pre+m.j
		ops.add(false, at, mi, bt, mj)
		ops.add(true, mi, mi+m.n, mj, mj+m.n)
		at, bt = mi+m.n, mj+m.n
	}
	ops.add(false, at, len(a)-suf, bt, len(b)-suf)
	ops.add(true, len(a)-suf, len(a), len(b)-suf, len(b))
	return ops
}

// opList builds a diffOp list, dropping empty stretches and merging
// neighbours of the same kind.
type opList []diffOp

func (l *opList) add(equal bool, i1, i2, j1, j2 int) {
	if i1 == i2 && j1 == j2 {
		return
	}
	if n := len(*l); n > 0 && (*l)[n-1].equal == equal {
		(*l)[n-1].i2, (*l)[n-1].j2 = i2, j2
		return
	}
	*l = append(*l, diffOp{equal: equal, i1: i1, i2: i2, j1: j1, j2: j2})
}

// internLines numbers the distinct lines of a and b, so the search
// compares integers rather than strings.
func internLines(a, b []string) ([]int32, []int32) {
	ids := make(map[string]int32, len(a)+len(b))
	number := func(lines []string) []int32 {
		out := make([]int32, len(lines))
		for i, line := range lines {
			id, ok := ids[line]
			if !ok {
				id = int32(len(ids))
				ids[line] = id
			}
			out[i] = id
		}
		return out
	}
	return number(a), number(b)
}

// lineMatch is a run of n equal lines, a[i:i+n] == b[j:j+n].
type lineMatch struct{ i, j, n int }

// matchLines returns the runs of lines an edit from a to b keeps, in
// order: a shortest edit's when one costs at most maxCost, else
// anchoredMatches'.
func matchLines(a, b []int32, maxCost int) []lineMatch {
	if len(a) == 0 || len(b) == 0 {
		return nil
	}
	if m, ok := myersMatches(a, b, maxCost); ok {
		return m
	}
	return anchoredMatches(a, b, maxCost)
}

// anchoredMatches keeps the lines that occur exactly once in a and in b,
// in an order both sides share (the patience diff's anchors), and between
// two anchors a shortest edit's runs when it costs at most maxCost; a
// stretch that costs more is replaced whole. Not recursing further keeps
// the work within O((N+M)·maxCost).
func anchoredMatches(a, b []int32, maxCost int) []lineMatch {
	anchors := uniqueAnchors(a, b)
	if len(anchors) == 0 {
		// The one stretch would be all of a and b, which the caller's
		// search has just found too costly.
		return nil
	}
	var out []lineMatch
	ai, bj := 0, 0
	// The sentinel past both ends closes the stretch after the last anchor.
	for _, an := range append(anchors, lineMatch{i: len(a), j: len(b)}) {
		if an.i > ai && an.j > bj {
			m, _ := myersMatches(a[ai:an.i], b[bj:an.j], maxCost)
			for _, r := range m {
				out = append(out, lineMatch{i: ai + r.i, j: bj + r.j, n: r.n})
			}
		}
		if an.n > 0 {
			out = append(out, an)
		}
		ai, bj = an.i+an.n, an.j+an.n
	}
	return out
}

// uniqueAnchors returns the longest sequence of lines that occur exactly
// once in a and exactly once in b, in the same order on both sides (the
// patience diff's anchors), as one-line matches.
func uniqueAnchors(a, b []int32) []lineMatch {
	// Line ids are small and dense (internLines), so a slice counts them.
	size := int32(0)
	for _, ids := range [][]int32{a, b} {
		for _, id := range ids {
			size = max(size, id+1)
		}
	}
	type seen struct{ inA, inB, i, j int }
	count := make([]seen, size)
	for i, id := range a {
		count[id].inA++
		count[id].i = i
	}
	for j, id := range b {
		count[id].inB++
		count[id].j = j
	}
	// Candidates in a's order; keep the longest run increasing in b.
	var cand []lineMatch
	for _, id := range a {
		if s := count[id]; s.inA == 1 && s.inB == 1 {
			cand = append(cand, lineMatch{i: s.i, j: s.j, n: 1})
		}
	}
	return longestIncreasing(cand)
}

// longestIncreasing returns the longest subsequence of c (ordered by i)
// whose j also increase, by patience sorting.
func longestIncreasing(c []lineMatch) []lineMatch {
	var tops []int // tops[k]: index in c of the smallest end of a run of length k+1
	prev := make([]int, len(c))
	for x, m := range c {
		k, _ := slices.BinarySearchFunc(tops, m.j, func(t, j int) int { return c[t].j - j })
		if k > 0 {
			prev[x] = tops[k-1]
		} else {
			prev[x] = -1
		}
		if k == len(tops) {
			tops = append(tops, x)
		} else {
			tops[k] = x
		}
	}
	if len(tops) == 0 {
		return nil
	}
	out := make([]lineMatch, len(tops))
	x := tops[len(tops)-1]
	for k := len(tops) - 1; k >= 0; k-- {
		out[k] = c[x]
		x = prev[x]
	}
	return out
}

// myersMatches finds a shortest edit from a to b (E. W. Myers, "An O(ND)
// Difference Algorithm and Its Variations", 1986) and returns the runs of
// lines it keeps. It gives up (ok false) when the edit needs more than
// maxCost inserted and deleted lines: the search costs O((N+M)·D) time and
// its trace O(D²) memory.
func myersMatches(a, b []int32, maxCost int) ([]lineMatch, bool) {
	n, m := len(a), len(b)
	limit := min(n+m, maxCost)
	off := limit + 1
	// v[off+k] is the furthest x reached on diagonal k = x - y.
	v := make([]int32, 2*limit+3)
	// trace holds v[-d..d] after each round d, at trace[d*d:(d+1)*(d+1)].
	var trace []int32
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1]) // down: insert b[y-1]
			} else {
				x = int(v[off+k-1]) + 1 // right: delete a[x-1]
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = int32(x)
			if x >= n && y >= m {
				return myersBacktrack(trace, d, x, y), true
			}
		}
		trace = append(trace, v[off-d:off+d+1]...)
	}
	return nil, false
}

// myersBacktrack walks the trace back from (x, y), reached in round d,
// collecting the diagonal runs (snakes) of the path.
func myersBacktrack(trace []int32, d, x, y int) []lineMatch {
	var out []lineMatch
	for ; d > 0; d-- {
		k := x - y
		round := trace[(d-1)*(d-1) : d*d] // v[-(d-1)..d-1] after round d-1
		at := func(k int) int { return int(round[k+d-1]) }
		prevK := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		}
		px := at(prevK)
		sx := px // the snake starts after the round's one edit
		if prevK == k-1 {
			sx++
		}
		if x > sx {
			out = append(out, lineMatch{i: sx, j: sx - k, n: x - sx})
		}
		x, y = px, px-prevK
	}
	if x > 0 {
		out = append(out, lineMatch{i: 0, j: 0, n: x})
	}
	slices.Reverse(out)
	return out
}

// groupHunks groups ops into hunks with n lines of context, exactly as
// Python's difflib.SequenceMatcher.get_grouped_opcodes does: an equal
// stretch longer than 2n lines splits two hunks.
func groupHunks(ops []diffOp, n int) [][]diffOp {
	if len(ops) == 0 {
		return nil
	}
	codes := slices.Clone(ops)
	if c := &codes[0]; c.equal {
		c.i1, c.j1 = max(c.i1, c.i2-n), max(c.j1, c.j2-n)
	}
	if c := &codes[len(codes)-1]; c.equal {
		c.i2, c.j2 = min(c.i2, c.i1+n), min(c.j2, c.j1+n)
	}
	var hunks [][]diffOp
	var hunk []diffOp
	for _, c := range codes {
		if c.equal && c.i2-c.i1 > 2*n {
			hunk = append(hunk, diffOp{equal: true, i1: c.i1, i2: min(c.i2, c.i1+n), j1: c.j1, j2: min(c.j2, c.j1+n)})
			hunks = append(hunks, hunk)
			hunk = nil
			c.i1, c.j1 = max(c.i1, c.i2-n), max(c.j1, c.j2-n)
		}
		hunk = append(hunk, c)
	}
	if len(hunk) > 0 && (len(hunk) != 1 || !hunk[0].equal) {
		hunks = append(hunks, hunk)
	}
	return hunks
}

// renderDiff writes the unified diff of hunks, cut to the description's
// bounds.
func renderDiff(path string, a, b []string, hunks [][]diffOp) string {
	var body diffBody
	body.line("--- a/" + path)
	body.line("+++ b/" + path)
	for _, h := range hunks {
		first, last := h[0], h[len(h)-1]
		body.line(fmt.Sprintf("@@ -%s +%s @@", unifiedRange(first.i1, last.i2), unifiedRange(first.j1, last.j2)))
		for _, op := range h {
			if op.equal {
				for _, s := range a[op.i1:op.i2] {
					body.content(' ', s)
				}
				continue
			}
			for _, s := range a[op.i1:op.i2] {
				body.content('-', s)
			}
			for _, s := range b[op.j1:op.j2] {
				body.content('+', s)
			}
		}
	}
	return body.String()
}

// unifiedRange is a hunk header's "start,length" (difflib's
// _format_range_unified): "start" alone for one line, and the line before
// for an empty range.
func unifiedRange(start, stop int) string {
	first, length := start+1, stop-start
	if length == 1 {
		return fmt.Sprint(first)
	}
	if length == 0 {
		first--
	}
	return fmt.Sprintf("%d,%d", first, length)
}

// diffBody collects a diff's lines up to maxDiffLines lines or
// maxDiffChars characters (each line counting its newline), and counts the
// lines past that, for the truncation note.
type diffBody struct {
	kept  []string
	chars int
	more  int // lines that did not fit
}

func (d *diffBody) line(s string) {
	if d.more > 0 {
		d.more++
		return
	}
	n := utf8.RuneCountInString(s) + 1
	if len(d.kept) >= maxDiffLines || d.chars+n > maxDiffChars {
		d.more = 1
		return
	}
	d.kept = append(d.kept, s)
	d.chars += n
}

// content adds one diff line for text (a line with its ending, if any),
// followed by git's marker when the line has no newline.
func (d *diffBody) content(prefix byte, text string) {
	s, hadNewline := strings.CutSuffix(text, "\n")
	if d.more > 0 {
		// Past the cut only the count matters; skip building the line.
		d.more++
	} else {
		d.line(string(prefix) + s)
	}
	if !hadNewline {
		d.line(`\ No newline at end of file`)
	}
}

func (d *diffBody) String() string {
	s := strings.Join(d.kept, "\n")
	if d.more > 0 {
		s += fmt.Sprintf("\n[diff truncated: %d more lines]", d.more)
	}
	return s
}
