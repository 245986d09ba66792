package export

import "bytes"

// The line diff below reproduces the choices git's xdiff makes for a plain
// `git diff` (Myers with its cost heuristics, not --minimal, then the
// indent heuristic, which git turns on by default), so the patch and the
// stat come out as git would print them rather than as merely another
// valid edit script. The constants are xdiff's.
const (
	// maxCostMin is the least edit cost past which a split gives up on
	// an optimal middle snake and takes the furthest-reaching one.
	maxCostMin = 256
	// heurMinCost is the edit cost past which a long snake is taken as
	// a good enough split point.
	heurMinCost = 256
	// snakeCount is the length of a snake that counts as long.
	snakeCount = 20
	// kHeur weighs a snake's progress against the edit cost.
	kHeur = 4
	// maxEqLimit caps how many matches a line may have before it counts
	// as a common one (blank lines, braces) that may be discarded.
	maxEqLimit = 1024
	// simScanWindow bounds the scan around a common line.
	simScanWindow = 100
	// kpDisRun is the ratio deciding when common lines in a run of
	// unmatched ones are discarded with them.
	kpDisRun = 4
)

// lineSide is one side of a line diff.
type lineSide struct {
	recs  [][]byte // the lines, each with its "\n" if it has one
	class []int    // equal lines share a class
	// changed marks the lines that differ; it has a false sentinel on
	// each end, so line i is changed[i+1].
	changed []bool
	// rindex lists the lines the search looks at (those not discarded
	// up front) and ha their classes.
	rindex []int
	ha     []int
}

func (s *lineSide) isChanged(i int) bool { return s.changed[i+1] }
func (s *lineSide) mark(i int, v bool)   { s.changed[i+1] = v }

// lineScript is one change: old lines [i1, i1+n1) replaced by new lines
// [i2, i2+n2).
type lineScript struct {
	i1, i2, n1, n2 int
}

// splitRecords cuts data into lines, each keeping its "\n".
func splitRecords(data []byte) [][]byte {
	var recs [][]byte
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n') + 1
		if n == 0 {
			n = len(data)
		}
		recs = append(recs, data[:n:n])
		data = data[n:]
	}
	return recs
}

// diffRecords returns the edit script from old to new lines, in order.
func diffRecords(a, b [][]byte) (*lineSide, *lineSide, []lineScript) {
	x, y := classify(a, b)
	prepareSearch(x, y)
	n1, n2 := len(x.rindex), len(y.rindex)
	ndiags := n1 + n2 + 3
	s := &searcher{
		x: x, y: y,
		kvdf:   make([]int, ndiags),
		kvdb:   make([]int, ndiags),
		off:    n2 + 1,
		mxcost: max(bogoSqrt(ndiags), maxCostMin),
	}
	s.compare(0, n1, 0, n2, false)
	compact(x, y)
	compact(y, x)
	return x, y, buildScript(x, y)
}

// classify numbers the distinct lines of both sides.
func classify(a, b [][]byte) (*lineSide, *lineSide) {
	ids := make(map[string]int, len(a)+len(b))
	side := func(recs [][]byte) *lineSide {
		s := &lineSide{recs: recs, class: make([]int, len(recs)), changed: make([]bool, len(recs)+2)}
		for i, r := range recs {
			id, ok := ids[string(r)]
			if !ok {
				id = len(ids)
				ids[string(r)] = id
			}
			s.class[i] = id
		}
		return s
	}
	return side(a), side(b)
}

// prepareSearch trims the common ends, then leaves out of the search the
// lines with no match on the other side (they are changed whatever the
// script) and the common lines sitting among them, as xdiff does.
func prepareSearch(x, y *lineSide) {
	lim := min(len(x.recs), len(y.recs))
	start := 0
	for start < lim && x.class[start] == y.class[start] {
		start++
	}
	tail := 0
	for tail < lim-start && x.class[len(x.recs)-1-tail] == y.class[len(y.recs)-1-tail] {
		tail++
	}
	countX, countY := classCounts(x), classCounts(y)
	discard(x, countY, start, len(x.recs)-1-tail)
	discard(y, countX, start, len(y.recs)-1-tail)
}

func classCounts(s *lineSide) map[int]int {
	n := make(map[int]int, len(s.class))
	for _, c := range s.class {
		n[c]++
	}
	return n
}

// discard fills s.rindex with the lines of [start, end] the search keeps,
// marking the rest changed. other counts each class on the other side.
func discard(s *lineSide, other map[int]int, start, end int) {
	mlim := min(bogoSqrt(len(s.recs)), maxEqLimit)
	dis := make([]byte, len(s.recs)+1)
	for i := start; i <= end; i++ {
		switch nm := other[s.class[i]]; {
		case nm == 0:
			dis[i] = 0
		case nm >= mlim:
			dis[i] = 2
		default:
			dis[i] = 1
		}
	}
	for i := start; i <= end; i++ {
		if dis[i] == 1 || (dis[i] == 2 && !cleanMultiMatch(dis, i, start, end)) {
			s.rindex = append(s.rindex, i)
			s.ha = append(s.ha, s.class[i])
		} else {
			s.mark(i, true)
		}
	}
}

// cleanMultiMatch reports whether the common line i sits in a run of
// unmatched lines dense enough to be discarded with them.
func cleanMultiMatch(dis []byte, i, s, e int) bool {
	s = max(s, i-simScanWindow)
	e = min(e, i+simScanWindow)
	rdis0, rpdis0 := 0, 1
scan0:
	for r := 1; i-r >= s; r++ {
		switch dis[i-r] {
		case 0:
			rdis0++
		case 2:
			rpdis0++
		default:
			break scan0
		}
	}
	if rdis0 == 0 {
		return false
	}
	rdis1, rpdis1 := 0, 1
scan1:
	for r := 1; i+r <= e; r++ {
		switch dis[i+r] {
		case 0:
			rdis1++
		case 2:
			rpdis1++
		default:
			break scan1
		}
	}
	if rdis1 == 0 {
		return false
	}
	rdis1 += rdis0
	rpdis1 += rpdis0
	return rpdis1*kpDisRun < rpdis1+rdis1
}

// bogoSqrt is xdiff's power-of-two square root estimate.
func bogoSqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// buildScript collects the changed runs of both sides into a script.
func buildScript(x, y *lineSide) []lineScript {
	var rev []lineScript
	i1, i2 := len(x.recs), len(y.recs)
	for i1 >= 0 || i2 >= 0 {
		if changedAt(x, i1-1) || changedAt(y, i2-1) {
			l1, l2 := i1, i2
			for changedAt(x, i1-1) {
				i1--
			}
			for changedAt(y, i2-1) {
				i2--
			}
			rev = append(rev, lineScript{i1: i1, i2: i2, n1: l1 - i1, n2: l2 - i2})
		}
		i1--
		i2--
	}
	out := make([]lineScript, len(rev))
	for i, c := range rev {
		out[len(rev)-1-i] = c
	}
	return out
}

// changedAt is isChanged that reads anything before the first sentinel as
// unchanged.
func changedAt(s *lineSide, i int) bool {
	return i >= -1 && s.isChanged(i)
}
