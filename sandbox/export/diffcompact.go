package export

// A run of changed lines whose first line equals the line after it (or
// whose last equals the line before it) can slide without changing the
// script's meaning. compact slides every run the way git does: merging
// with neighbours it bumps into, lining up with a change on the other
// side when it can, and otherwise placing it where the indent heuristic
// scores best, so hunks match git's line for line.
const (
	maxIndent           = 200
	maxBlanks           = 20
	indentMaxSliding    = 100
	startOfFilePenalty  = 1
	endOfFilePenalty    = 21
	totalBlankWeight    = -30
	postBlankWeight     = 6
	relIndentPenalty    = -4
	relIndentBlankPen   = 10
	relOutdentPenalty   = 24
	relOutdentBlankPen  = 17
	relDedentPenalty    = 23
	relDedentBlankPen   = 17
	indentWeight        = 60
	noIndent            = -1
	noShift             = -1
	noMatchingOtherHunk = -1
)

// group is a run of changed lines [start, end); empty groups sit between
// unchanged lines.
type group struct{ start, end int }

func firstGroup(s *lineSide) group {
	g := group{}
	for s.isChanged(g.end) {
		g.end++
	}
	return g
}

// next moves g to the following group; false at the end of the file.
func (g *group) next(s *lineSide) bool {
	if g.end == len(s.recs) {
		return false
	}
	g.start = g.end + 1
	g.end = g.start
	for s.isChanged(g.end) {
		g.end++
	}
	return true
}

// previous moves g to the group before; false at the start of the file.
func (g *group) previous(s *lineSide) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	g.start = g.end
	for s.isChanged(g.start - 1) {
		g.start--
	}
	return true
}

// slideDown moves g one line down, absorbing a group it runs into.
func (g *group) slideDown(s *lineSide) bool {
	if g.end < len(s.recs) && s.class[g.start] == s.class[g.end] {
		s.mark(g.start, false)
		s.mark(g.end, true)
		g.start++
		g.end++
		for s.isChanged(g.end) {
			g.end++
		}
		return true
	}
	return false
}

// slideUp moves g one line up, absorbing a group it runs into.
func (g *group) slideUp(s *lineSide) bool {
	if g.start > 0 && s.class[g.start-1] == s.class[g.end-1] {
		g.start--
		g.end--
		s.mark(g.start, true)
		s.mark(g.end, false)
		for s.isChanged(g.start - 1) {
			g.start--
		}
		return true
	}
	return false
}

// compact slides the groups of s, keeping go in step on the other side o.
// The other side's groups move in lockstep, so the sync can't break; a
// failed step means a bug here and panics rather than emitting a wrong
// patch.
func compact(s, o *lineSide) {
	g, og := firstGroup(s), firstGroup(o)
	must := func(ok bool) {
		if !ok {
			panic("export: line diff groups out of sync")
		}
	}
	for {
		if g.end != g.start {
			var groupSize, earliestEnd int
			endMatchingOther := noMatchingOtherHunk
			for {
				groupSize = g.end - g.start
				endMatchingOther = noMatchingOtherHunk
				for g.slideUp(s) {
					must(og.previous(o))
				}
				earliestEnd = g.end
				if og.end > og.start {
					endMatchingOther = g.end
				}
				for g.slideDown(s) {
					must(og.next(o))
					if og.end > og.start {
						endMatchingOther = g.end
					}
				}
				if groupSize == g.end-g.start {
					break
				}
			}
			switch {
			case g.end == earliestEnd:
				// It cannot move.
			case endMatchingOther != noMatchingOtherHunk:
				for og.end == og.start {
					must(g.slideUp(s))
					must(og.previous(o))
				}
			default:
				best := bestShift(s, g, groupSize, earliestEnd)
				for g.end > best {
					must(g.slideUp(s))
					must(og.previous(o))
				}
			}
		}
		if !g.next(s) {
			break
		}
		must(og.next(o))
	}
}

// bestShift is the end position, between the highest the group can go and
// where it is now (as low as it goes), whose two split points score best.
func bestShift(s *lineSide, g group, groupSize, earliestEnd int) int {
	shift := max(earliestEnd, g.end-groupSize-1, g.end-indentMaxSliding)
	best := noShift
	var bestScore splitScore
	for ; shift <= g.end; shift++ {
		var sc splitScore
		sc.add(measureSplit(s, shift))
		sc.add(measureSplit(s, shift-groupSize))
		if best == noShift || sc.cmp(bestScore) <= 0 {
			bestScore = sc
			best = shift
		}
	}
	return best
}

// lineIndent is the line's indentation, tabs to multiples of eight,
// capped at maxIndent; noIndent for a blank line.
func lineIndent(rec []byte) int {
	n := 0
	for _, c := range rec {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 8 - n%8
		case '\n', '\v', '\f', '\r':
		default:
			return n
		}
		if n >= maxIndent {
			return maxIndent
		}
	}
	return noIndent
}

// splitMeasure describes the lines around a split above line split.
type splitMeasure struct {
	endOfFile  bool
	indent     int
	preBlank   int
	preIndent  int
	postBlank  int
	postIndent int
}

func measureSplit(s *lineSide, split int) splitMeasure {
	var m splitMeasure
	if split >= len(s.recs) {
		m.endOfFile = true
		m.indent = noIndent
	} else {
		m.indent = lineIndent(s.recs[split])
	}
	m.preIndent = noIndent
	for i := split - 1; i >= 0; i-- {
		m.preIndent = lineIndent(s.recs[i])
		if m.preIndent != noIndent {
			break
		}
		m.preBlank++
		if m.preBlank == maxBlanks {
			m.preIndent = 0
			break
		}
	}
	m.postIndent = noIndent
	for i := split + 1; i < len(s.recs); i++ {
		m.postIndent = lineIndent(s.recs[i])
		if m.postIndent != noIndent {
			break
		}
		m.postBlank++
		if m.postBlank == maxBlanks {
			m.postIndent = 0
			break
		}
	}
	return m
}

// splitScore is a badness: lower is better.
type splitScore struct {
	effectiveIndent int
	penalty         int
}

func (sc *splitScore) add(m splitMeasure) {
	if m.preIndent == noIndent && m.preBlank == 0 {
		sc.penalty += startOfFilePenalty
	}
	if m.endOfFile {
		sc.penalty += endOfFilePenalty
	}
	postBlank := 0
	if m.indent == noIndent {
		postBlank = 1 + m.postBlank
	}
	totalBlank := m.preBlank + postBlank
	sc.penalty += totalBlankWeight*totalBlank + postBlankWeight*postBlank
	indent := m.indent
	if indent == noIndent {
		indent = m.postIndent
	}
	anyBlanks := totalBlank != 0
	sc.effectiveIndent += indent
	pick := func(blank, plain int) int {
		if anyBlanks {
			return blank
		}
		return plain
	}
	switch {
	case indent == noIndent, m.preIndent == noIndent, indent == m.preIndent:
	case indent > m.preIndent:
		sc.penalty += pick(relIndentBlankPen, relIndentPenalty)
	case m.postIndent != noIndent && m.postIndent > indent:
		sc.penalty += pick(relOutdentBlankPen, relOutdentPenalty)
	default:
		sc.penalty += pick(relDedentBlankPen, relDedentPenalty)
	}
}

func (sc splitScore) cmp(o splitScore) int {
	c := 0
	if sc.effectiveIndent > o.effectiveIndent {
		c = 1
	} else if sc.effectiveIndent < o.effectiveIndent {
		c = -1
	}
	return indentWeight*c + (sc.penalty - o.penalty)
}
