package bench

import (
	"math"
	"slices"
)

// z95 is the standard normal quantile of 0.975: a two-sided 95 % interval.
const z95 = 1.959963984540054

// Interval is a confidence interval for a proportion.
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Wilson is the Wilson score interval at 95 % for passes successes out of
// n trials (Wilson 1927, "Probable inference, the law of succession, and
// statistical inference", JASA 22:209-212). With p = passes/n and z the
// 0.975 normal quantile:
//
//	centre = (p + z²/2n) / (1 + z²/n)
//	half   = z/(1 + z²/n) · sqrt(p(1-p)/n + z²/4n²)
//
// Unlike the Wald interval p ± z·sqrt(p(1-p)/n) it stays inside [0, 1] and
// does not collapse to a point at 0 or n passes, which is where small
// benchmark samples live. n need not be whole (see TaskClustered); ok is
// false for n ≤ 0.
func Wilson(passes, n float64) (iv Interval, ok bool) {
	if n <= 0 {
		return Interval{}, false
	}
	p := passes / n
	z2 := z95 * z95
	denom := 1 + z2/n
	centre := (p + z2/(2*n)) / denom
	half := z95 / denom * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return Interval{Lo: max(0, centre-half), Hi: min(1, centre+half)}, true
}

// TaskCluster is one task's cases in a pass rate: how many ran and passed.
type TaskCluster struct {
	N, Passes int
}

// Clustered is a pass rate's interval that accounts for the cases of one
// task being alike: repeats of one task are not independent trials, so
// the plain Wilson interval is too narrow when a model either always or
// never solves a task.
type Clustered struct {
	Interval Interval `json:"interval"`
	// DesignEffect is the variance of the pass rate with tasks as clusters
	// over its variance as independent trials, at least 1.
	DesignEffect float64 `json:"design_effect"`
	// EffectiveN is the number of cases over the design effect: the sample
	// size of independent trials that carries as much information.
	EffectiveN float64 `json:"effective_n"`
}

// TaskClustered is the task-clustered 95 % interval of a pass rate: the
// Wilson interval at the effective sample size n/deff (Kish 1965, Survey
// Sampling, §8.2, the design effect; its use with score intervals for
// proportions follows Korn & Graubard 1998, "Confidence intervals for
// proportions with small expected number of positive counts estimated from
// survey data", Survey Methodology 24:193-201).
//
// With G tasks, task g having m_g cases and y_g passes, n = Σ m_g and
// p = Σ y_g / n, the cluster-robust (CR1) variance of p is
//
//	V_task = G/(G-1) · Σ_g (y_g - p·m_g)² / n²
//
// and the design effect is deff = max(1, V_task / (p(1-p)/n)). Where p is 0
// or 1, or there is one task, the data say nothing about clustering and
// deff is 1.
//
// Why this and not the alternatives: a sweep has a handful of tasks (eight
// fixtures, say). A cluster bootstrap over eight clusters has few distinct
// resamples, is random (two summaries of one file would differ) and
// collapses to a point when every task has the same pass rate; the plain
// cluster-robust normal interval p ± z·sqrt(V_task) also collapses at 0 and
// 1 and leaves [0, 1]. The design-effect Wilson interval is deterministic,
// checkable by hand, stays in [0, 1], and is never narrower than the
// unclustered Wilson interval (deff ≥ 1 is the conservative choice Korn
// and Graubard recommend).
func TaskClustered(tasks []TaskCluster) (Clustered, bool) {
	var n, passes int
	for _, t := range tasks {
		n += t.N
		passes += t.Passes
	}
	if n == 0 {
		return Clustered{}, false
	}
	p := float64(passes) / float64(n)
	deff := designEffect(tasks, n, p)
	nEff := float64(n) / deff
	iv, _ := Wilson(p*nEff, nEff)
	return Clustered{Interval: iv, DesignEffect: deff, EffectiveN: nEff}, true
}

func designEffect(tasks []TaskCluster, n int, p float64) float64 {
	g := 0
	for _, t := range tasks {
		if t.N > 0 {
			g++
		}
	}
	if g < 2 || p == 0 || p == 1 {
		return 1
	}
	var ss float64
	for _, t := range tasks {
		d := float64(t.Passes) - p*float64(t.N)
		ss += d * d
	}
	nf := float64(n)
	vTask := float64(g) / float64(g-1) * ss / (nf * nf)
	vSRS := p * (1 - p) / nf
	return max(1, vTask/vSRS)
}

// PassAtK is the unbiased estimator of pass@k for one task with n cases of
// which c passed: the chance that at least one of k cases drawn without
// replacement passed, 1 - C(n-c, k)/C(n, k) (Chen et al. 2021, "Evaluating
// large language models trained on code", eq. 1). It is computed as
// 1 - Π_{i=n-c+1}^{n} (1 - k/i), which needs no large binomials. k must be
// in [1, n].
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	prod := 1.0
	for i := n - c + 1; i <= n; i++ {
		prod *= 1 - float64(k)/float64(i)
	}
	return 1 - prod
}

// PassHatK is the unbiased estimator of pass^k for one task with n cases of
// which c passed: the chance that all of k cases drawn without replacement
// passed, C(c, k)/C(n, k) (Yao et al. 2024, "τ-bench", §4), computed as
// Π_{i=0}^{k-1} (c-i)/(n-i). At k = n it is 1 exactly when every repeat
// passed. k must be in [1, n].
func PassHatK(n, c, k int) float64 {
	if c < k {
		return 0
	}
	prod := 1.0
	for i := range k {
		prod *= float64(c-i) / float64(n-i)
	}
	return prod
}

// McNemarExact is the two-sided p-value of the exact McNemar test on paired
// pass/fail outcomes, b pairs where only the first side passed and c where
// only the second did (McNemar 1947; the exact form is the sign test on
// the b+c discordant pairs, binomial with probability 1/2):
//
//	p = min(1, 2 · Σ_{i=0}^{min(b,c)} C(b+c, i) / 2^(b+c))
//
// Concordant pairs carry no information on the difference. With no
// discordant pair p is 1.
func McNemarExact(b, c int) float64 {
	m := b + c
	if m == 0 {
		return 1
	}
	tail := 0.0
	for i := 0; i <= min(b, c); i++ {
		tail += math.Exp(logChoose(m, i) - float64(m)*math.Ln2)
	}
	return min(1, 2*tail)
}

// logChoose is ln C(n, k).
func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// median is the middle value of xs, or the mean of the two middle values
// when there is an even number of them; xs must not be empty. xs is not
// changed.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}
