package bench

import (
	"math"
	"testing"
)

// near reports whether got rounds to want at three decimals (the reference
// values below are given to three decimals, or exactly).
func near(got, want float64) bool { return math.Abs(got-want) <= 0.0005 }

func TestWilsonReferenceValues(t *testing.T) {
	t.Parallel()
	// 7/10 is the issue's; the next four are Newcombe (1998), "Two-sided
	// confidence intervals for the single proportion", Statistics in
	// Medicine 17:857-872, table I, method 3 (score, no continuity
	// correction); 0/10 and 10/10 were computed by hand from the formula.
	for _, tc := range []struct {
		x, n   float64
		lo, hi float64
	}{
		{7, 10, 0.397, 0.892},
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
		{0, 10, 0, 0.278},
		{10, 10, 0.722, 1},
		{2, 4, 0.150, 0.850},
		{1, 2, 0.095, 0.905},
	} {
		iv, ok := Wilson(tc.x, tc.n)
		if !ok || !near(iv.Lo, tc.lo) || !near(iv.Hi, tc.hi) {
			t.Errorf("Wilson(%v, %v) = [%.4f, %.4f], %v; want [%.4f, %.4f]", tc.x, tc.n, iv.Lo, iv.Hi, ok, tc.lo, tc.hi)
		}
		if iv.Lo < 0 || iv.Hi > 1 {
			t.Errorf("Wilson(%v, %v) = %+v leaves [0, 1]", tc.x, tc.n, iv)
		}
	}
	if _, ok := Wilson(0, 0); ok {
		t.Error("Wilson(0, 0) gave an interval")
	}
}

func TestTaskClustered(t *testing.T) {
	t.Parallel()
	// Values computed by hand from the formulas in the doc comment (and
	// checked with python3).
	for _, tc := range []struct {
		name       string
		tasks      []TaskCluster
		deff, nEff float64
		lo, hi     float64
	}{
		{
			// p = 0.5, Σ(y - p·m)² = 8, V_task = 3/2 · 8/144, V_srs = 0.25/12.
			name:  "tasks either solved or not",
			tasks: []TaskCluster{{N: 4, Passes: 4}, {N: 4, Passes: 0}, {N: 4, Passes: 2}},
			deff:  4, nEff: 3, lo: 0.125, hi: 0.875,
		},
		{
			name:  "seven of ten over five tasks",
			tasks: []TaskCluster{{2, 2}, {2, 2}, {2, 2}, {2, 1}, {2, 0}},
			deff:  1.905, nEff: 5.25, lo: 0.306, hi: 0.925,
		},
		{
			// The tasks are more alike than chance: deff < 1 is raised to 1,
			// the interval is Wilson's for 6/12.
			name:  "never narrower than Wilson",
			tasks: []TaskCluster{{3, 2}, {3, 1}, {3, 2}, {3, 1}},
			deff:  1, nEff: 12, lo: 0.254, hi: 0.746,
		},
		{
			name:  "one task says nothing of clustering",
			tasks: []TaskCluster{{4, 1}},
			deff:  1, nEff: 4, lo: 0.046, hi: 0.699,
		},
		{
			name:  "all passed",
			tasks: []TaskCluster{{2, 2}, {3, 3}},
			deff:  1, nEff: 5, lo: 0.566, hi: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, ok := TaskClustered(tc.tasks)
			if !ok || !near(c.DesignEffect, tc.deff) || !near(c.EffectiveN, tc.nEff) ||
				!near(c.Interval.Lo, tc.lo) || !near(c.Interval.Hi, tc.hi) {
				t.Fatalf("TaskClustered = %+v, %v; want deff %.3f, n_eff %.3f, [%.3f, %.3f]", c, ok, tc.deff, tc.nEff, tc.lo, tc.hi)
			}
		})
	}
	if _, ok := TaskClustered(nil); ok {
		t.Error("TaskClustered(nil) gave an interval")
	}
}

func TestPassAtKAndPassHatK(t *testing.T) {
	t.Parallel()
	// 1 - C(n-c,k)/C(n,k) and C(c,k)/C(n,k), by hand: C(7,5)/C(10,5) =
	// 21/252, C(7,2)/C(10,2) = 21/45, C(3,2)/C(10,2) = 3/45.
	for _, tc := range []struct {
		n, c, k int
		at, hat float64
	}{
		{10, 3, 1, 0.3, 0.3},
		{10, 3, 5, 1 - 21.0/252, 0},
		{10, 3, 2, 1 - 21.0/45, 3.0 / 45},
		{5, 5, 5, 1, 1},
		{5, 4, 5, 1, 0},
		{3, 0, 2, 0, 0},
		{2, 1, 2, 1, 0},
		{20, 7, 10, 0.998, 0},
	} {
		if got := PassAtK(tc.n, tc.c, tc.k); !near(got, tc.at) {
			t.Errorf("PassAtK(%d, %d, %d) = %.4f, want %.4f", tc.n, tc.c, tc.k, got, tc.at)
		}
		if got := PassHatK(tc.n, tc.c, tc.k); !near(got, tc.hat) {
			t.Errorf("PassHatK(%d, %d, %d) = %.4f, want %.4f", tc.n, tc.c, tc.k, got, tc.hat)
		}
	}
}

func TestMcNemarExact(t *testing.T) {
	t.Parallel()
	// 2·Σ_{i≤min} C(b+c, i)/2^(b+c) by hand: (1, 9) is 2·11/1024; (0, 5)
	// is 2/32; (3, 12) is 2·(1+15+105+455)/32768. (10, 30) and (600, 700)
	// were computed with python3's exact math.comb.
	for _, tc := range []struct {
		b, c int
		p    float64
	}{
		{1, 9, 0.021484375},
		{9, 1, 0.021484375},
		{0, 5, 0.0625},
		{0, 6, 0.03125},
		{3, 12, 0.03515625},
		{2, 2, 1},
		{0, 0, 1},
		{1, 2, 1},
		{10, 30, 0.0022214337732293643},
		{600, 700, 0.0060157938610449525},
	} {
		if got := McNemarExact(tc.b, tc.c); math.Abs(got-tc.p) > 1e-9 {
			t.Errorf("McNemarExact(%d, %d) = %.10f, want %.10f", tc.b, tc.c, got, tc.p)
		}
	}
}

func TestMedian(t *testing.T) {
	t.Parallel()
	xs := []float64{3, 1, 2}
	if got := median(xs); got != 2 {
		t.Errorf("median(3 1 2) = %v", got)
	}
	if xs[0] != 3 {
		t.Error("median sorted its argument")
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median(4 1 3 2) = %v", got)
	}
}
