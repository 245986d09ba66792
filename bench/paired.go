package bench

import (
	"slices"
	"strings"
)

// Alpha is the significance level of the paired test: a difference with a
// two-sided p at or above it is "not separable".
const Alpha = 0.05

// Paired compares one group (model and serving setup) across two files:
// each side's pass rate, and the exact McNemar test over the cases (task
// and repeat) both files counted.
type Paired struct {
	Label string `json:"label"`
	// A and B are each side's rate; nil for a side without the group.
	A *Rate `json:"a"`
	B *Rate `json:"b"`
	// Pairs counts the cases counted in both files; AOnly those only A
	// passed, BOnly those only B passed.
	Pairs int `json:"pairs"`
	AOnly int `json:"a_only"`
	BOnly int `json:"b_only"`
	// P is the two-sided exact McNemar p-value, nil without pairs.
	P *float64 `json:"p"`
	// Separable is P < Alpha, nil without pairs.
	Separable *bool `json:"separable"`
}

// Rate is a pass rate and its Wilson interval.
type Rate struct {
	N        int       `json:"n"`
	Passes   int       `json:"passes"`
	PassRate *float64  `json:"pass_rate"`
	Wilson   *Interval `json:"wilson"`
}

// caseID is a case within a group: its task and repeat, as written.
type caseID struct{ task, repeat string }

// pairedStats pairs the groups of both files by label, sorted by label.
func pairedStats(a, b []entry, groupsA, groupsB []GroupStats) []Paired {
	outcomesA, outcomesB := caseOutcomes(a), caseOutcomes(b)
	byLabel := map[string]*Paired{}
	var labels []string
	add := func(gs []GroupStats, side func(*Paired, *Rate)) {
		for _, g := range gs {
			p, ok := byLabel[g.Label]
			if !ok {
				p = &Paired{Label: g.Label}
				byLabel[g.Label] = p
				labels = append(labels, g.Label)
			}
			side(p, &Rate{N: g.N, Passes: g.Passes, PassRate: g.PassRate, Wilson: g.Wilson})
		}
	}
	add(groupsA, func(p *Paired, r *Rate) { p.A = r })
	add(groupsB, func(p *Paired, r *Rate) { p.B = r })
	slices.SortFunc(labels, strings.Compare)
	out := make([]Paired, len(labels))
	for i, l := range labels {
		p := byLabel[l]
		p.test(outcomesA[l], outcomesB[l])
		out[i] = *p
	}
	return out
}

// test runs the paired test over the cases both sides counted.
func (p *Paired) test(a, b map[caseID]bool) {
	for id, passA := range a {
		passB, ok := b[id]
		if !ok {
			continue
		}
		p.Pairs++
		switch {
		case passA && !passB:
			p.AOnly++
		case passB && !passA:
			p.BOnly++
		}
	}
	if p.Pairs == 0 {
		return
	}
	pv := McNemarExact(p.AOnly, p.BOnly)
	sep := pv < Alpha
	p.P, p.Separable = &pv, &sep
}

// caseOutcomes is, per group label, whether each counted case passed; a
// case written twice counts as its last row.
func caseOutcomes(es []entry) map[string]map[caseID]bool {
	labels := map[groupKey]string{}
	out := map[string]map[caseID]bool{}
	for _, e := range es {
		if e.row.Infra() {
			continue
		}
		k := groupKeyOf(e)
		label, ok := labels[k]
		if !ok {
			label = groupLabel(k.model, e.row.Serving)
			labels[k] = label
		}
		if out[label] == nil {
			out[label] = map[caseID]bool{}
		}
		id := caseID{task: pyStr(get(e.raw, "task", "?")), repeat: pyStr(get(e.raw, "repeat", nil))}
		out[label][id] = passed(e)
	}
	return out
}
