package export

import "math"

// searcher is the divide-and-conquer Myers search over the lines
// prepareSearch kept, with xdiff's heuristics for costly boxes.
type searcher struct {
	x, y *lineSide
	// kvdf and kvdb are the forward and backward furthest points per
	// diagonal, indexed by diagonal + off.
	kvdf, kvdb []int
	off        int
	mxcost     int
}

// split is where a box is cut, and whether each half must be searched
// for an optimal script.
type split struct {
	i1, i2          int
	minLow, minHigh bool
}

// compare marks the changed lines of the box [off1, lim1) × [off2, lim2)
// of the kept lines.
func (s *searcher) compare(off1, lim1, off2, lim2 int, needMin bool) {
	x, y := s.x, s.y
	for off1 < lim1 && off2 < lim2 && x.ha[off1] == y.ha[off2] {
		off1++
		off2++
	}
	for off1 < lim1 && off2 < lim2 && x.ha[lim1-1] == y.ha[lim2-1] {
		lim1--
		lim2--
	}
	switch {
	case off1 == lim1:
		for ; off2 < lim2; off2++ {
			y.mark(y.rindex[off2], true)
		}
	case off2 == lim2:
		for ; off1 < lim1; off1++ {
			x.mark(x.rindex[off1], true)
		}
	default:
		sp := s.split(off1, lim1, off2, lim2, needMin)
		s.compare(off1, sp.i1, off2, sp.i2, sp.minLow)
		s.compare(sp.i1, lim1, sp.i2, lim2, sp.minHigh)
	}
}

// split finds the middle snake of a box, or, once the cost grows past the
// heuristics' limits, a point on a good enough path.
func (s *searcher) split(off1, lim1, off2, lim2 int, needMin bool) split {
	x, y := s.x.ha, s.y.ha
	kf := func(d int) *int { return &s.kvdf[d+s.off] }
	kb := func(d int) *int { return &s.kvdb[d+s.off] }
	dmin, dmax := off1-lim2, lim1-off2
	fmid, bmid := off1-off2, lim1-lim2
	odd := (fmid-bmid)&1 != 0
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid
	*kf(fmid) = off1
	*kb(bmid) = lim1

	for ec := 1; ; ec++ {
		gotSnake := false

		// Widen the forward diagonals by one each way, or narrow them
		// where they would leave the box; the outer sentinel keeps the
		// loop free of bounds checks.
		if fmin > dmin {
			fmin--
			*kf(fmin - 1) = -1
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			*kf(fmax + 1) = -1
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			var i1 int
			if *kf(d - 1) >= *kf(d + 1) {
				i1 = *kf(d - 1) + 1
			} else {
				i1 = *kf(d + 1)
			}
			prev1 := i1
			i2 := i1 - d
			for i1 < lim1 && i2 < lim2 && x[i1] == y[i2] {
				i1++
				i2++
			}
			if i1-prev1 > snakeCount {
				gotSnake = true
			}
			*kf(d) = i1
			if odd && bmin <= d && d <= bmax && *kb(d) <= i1 {
				return split{i1: i1, i2: i2, minLow: true, minHigh: true}
			}
		}

		if bmin > dmin {
			bmin--
			*kb(bmin - 1) = math.MaxInt
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			*kb(bmax + 1) = math.MaxInt
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			var i1 int
			if *kb(d - 1) < *kb(d + 1) {
				i1 = *kb(d - 1)
			} else {
				i1 = *kb(d + 1) - 1
			}
			prev1 := i1
			i2 := i1 - d
			for i1 > off1 && i2 > off2 && x[i1-1] == y[i2-1] {
				i1--
				i2--
			}
			if prev1-i1 > snakeCount {
				gotSnake = true
			}
			*kb(d) = i1
			if !odd && fmin <= d && d <= fmax && i1 <= *kf(d) {
				return split{i1: i1, i2: i2, minLow: true, minHigh: true}
			}
		}

		if needMin {
			continue
		}

		// Past the trigger cost, a diagonal that got far from its
		// corner along a long snake is taken as the split.
		if gotSnake && ec > heurMinCost {
			best, sp := 0, split{}
			for d := fmax; d >= fmin; d -= 2 {
				dd := abs(d - fmid)
				i1 := *kf(d)
				i2 := i1 - d
				v := (i1 - off1) + (i2 - off2) - dd
				if v > kHeur*ec && v > best &&
					off1+snakeCount <= i1 && i1 < lim1 &&
					off2+snakeCount <= i2 && i2 < lim2 {
					for k := 1; x[i1-k] == y[i2-k]; k++ {
						if k == snakeCount {
							best = v
							sp = split{i1: i1, i2: i2}
							break
						}
					}
				}
			}
			if best > 0 {
				sp.minLow, sp.minHigh = true, false
				return sp
			}
			for d := bmax; d >= bmin; d -= 2 {
				dd := abs(d - bmid)
				i1 := *kb(d)
				i2 := i1 - d
				v := (lim1 - i1) + (lim2 - i2) - dd
				if v > kHeur*ec && v > best &&
					off1 < i1 && i1 <= lim1-snakeCount &&
					off2 < i2 && i2 <= lim2-snakeCount {
					for k := 0; x[i1+k] == y[i2+k]; k++ {
						if k == snakeCount-1 {
							best = v
							sp = split{i1: i1, i2: i2}
							break
						}
					}
				}
			}
			if best > 0 {
				sp.minLow, sp.minHigh = false, true
				return sp
			}
		}

		// Enough: take the furthest-reaching path found so far.
		if ec >= s.mxcost {
			return s.furthest(off1, lim1, off2, lim2, fmin, fmax, bmin, bmax)
		}
	}
}

// furthest picks the point the forward or backward search got furthest
// along, measured by i1+i2.
func (s *searcher) furthest(off1, lim1, off2, lim2, fmin, fmax, bmin, bmax int) split {
	fbest, fbest1 := -1, -1
	for d := fmax; d >= fmin; d -= 2 {
		i1 := min(s.kvdf[d+s.off], lim1)
		i2 := i1 - d
		if lim2 < i2 {
			i1 = lim2 + d
			i2 = lim2
		}
		if fbest < i1+i2 {
			fbest = i1 + i2
			fbest1 = i1
		}
	}
	bbest, bbest1 := math.MaxInt, math.MaxInt
	for d := bmax; d >= bmin; d -= 2 {
		i1 := max(off1, s.kvdb[d+s.off])
		i2 := i1 - d
		if i2 < off2 {
			i1 = off2 + d
			i2 = off2
		}
		if i1+i2 < bbest {
			bbest = i1 + i2
			bbest1 = i1
		}
	}
	if (lim1+lim2)-bbest < fbest-(off1+off2) {
		return split{i1: fbest1, i2: fbest - fbest1, minLow: true}
	}
	return split{i1: bbest1, i2: bbest - bbest1, minHigh: true}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
