package runlist

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/dirtywork/dirtywork/tui/runinfo"
)

// query is a parsed filter: field terms (repo:, model:, status:) and free
// words; a row matches when every term does (case-insensitive substrings).
// Field terms only filter; free words also rank the rows that match (see
// score).
type query struct {
	repo, model, status []string
	words               []string
}

func parseQuery(s string) query {
	var q query
	for f := range strings.FieldsSeq(strings.ToLower(s)) {
		name, val, ok := strings.Cut(f, ":")
		if ok && val != "" {
			switch name {
			case "repo":
				q.repo = append(q.repo, val)
				continue
			case "model":
				q.model = append(q.model, val)
				continue
			case "status", "is":
				q.status = append(q.status, val)
				continue
			}
		}
		q.words = append(q.words, f)
	}
	return q
}

// ranks says whether the query orders the rows it keeps (it has free
// words); field terms alone keep the list's order.
func (q query) ranks() bool { return len(q.words) > 0 }

// How a free word's best match counts, by where it matched: a match in the
// task beats any match in the repo, model or status, which beats any match
// in the key (the slug). The slug comes last because it repeats the task
// and adds digits of its own (a timestamp, a hex id): "bug 3" must not
// rank "fix bug 6" up for a 3 in its slug.
const (
	tierKey   = 0
	tierOther = 3
	tierTask  = 6
)

// How well a word matches where it occurs (added to its tier).
const (
	gradeInside = 1 // inside a word ("3" in "13")
	gradePrefix = 2 // starting a word ("3" in "31")
	gradeWhole  = 3 // a whole word ("3" in "fix bug 3")
)

// Bonuses for the query's words standing next to each other in the task,
// in order ("bug 3" in "fix bug 3 in the parser"): the last word whole, or
// only its start.
const (
	phraseWhole  = 4
	phrasePrefix = 2
)

// score says whether the row matches q and, when it does, how well: the
// higher, the nearer the top. Every term must match as before; the score
// adds, for each free word, its best match (see the tiers and grades),
// then the phrase bonus. It runs for every row on every keystroke and
// every change of the root, so it reads the other fields only for a word
// the task lacks.
func (q query) score(it runinfo.Item) (int, bool) {
	if len(q.repo) > 0 && !all(q.repo, strings.ToLower(it.Run.Repo+" "+it.Repo())) {
		return 0, false
	}
	if len(q.model) > 0 && !all(q.model, strings.ToLower(it.Model())) {
		return 0, false
	}
	var others []string // repo, model, status: read when first needed
	if len(q.status) > 0 {
		others = otherFields(it)
		if !all(q.status, others[2]) {
			return 0, false
		}
	}
	if len(q.words) == 0 {
		return 0, true
	}
	task := strings.ToLower(it.Task())
	total, allInTask := 0, true
	var key string
	for _, w := range q.words {
		if g := grade(task, w); g > 0 {
			total += tierTask + g
			continue
		}
		allInTask = false
		if others == nil {
			others = otherFields(it)
		}
		best := 0
		for _, f := range others {
			if g := grade(f, w); g > 0 {
				best = max(best, tierOther+g)
			}
		}
		if best == 0 {
			if key == "" {
				key = strings.ToLower(it.Key)
			}
			if g := grade(key, w); g > 0 {
				best = tierKey + g
			}
		}
		if best == 0 {
			return 0, false
		}
		total += best
	}
	if allInTask {
		// Side by side in the task implies each in the task.
		total += phrase(task, q.words)
	}
	return total, true
}

// otherFields are the row's repo, model and status texts, lower case (the
// status in every form a filter may name it: the word shown, the
// recorded status, the group, the verdict).
func otherFields(it runinfo.Item) []string {
	status := strings.ToLower(it.StatusText() + " " + string(it.Run.Status) + " " + it.Phase().String() + " " + string(it.Run.Verdict))
	return []string{strings.ToLower(it.Repo()), strings.ToLower(it.Model()), status}
}

// grade is how well w occurs in text: 0 when it does not, else the best
// of its occurrences (gradeWhole, gradePrefix or gradeInside). Both are
// lower case.
func grade(text, w string) int {
	best := 0
	for from := 0; from <= len(text)-len(w); {
		i := strings.Index(text[from:], w)
		if i < 0 {
			break
		}
		i += from
		left := startsWord(text, i, w)
		right := endsWord(text, i+len(w), w)
		switch {
		case left && right:
			return gradeWhole
		case left:
			best = max(best, gradePrefix)
		default:
			best = max(best, gradeInside)
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		from = i + max(1, n)
	}
	return best
}

// startsWord says whether w at text[i:] begins at a word's start (or
// begins with a separator itself).
func startsWord(text string, i int, w string) bool {
	if r, _ := utf8.DecodeRuneInString(w); !wordRune(r) {
		return true
	}
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return !wordRune(r)
}

// endsWord says whether w ending at text[:j] ends a word (or ends with a
// separator itself).
func endsWord(text string, j int, w string) bool {
	if r, _ := utf8.DecodeLastRuneInString(w); !wordRune(r) {
		return true
	}
	if j >= len(text) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(text[j:])
	return !wordRune(r)
}

func wordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// words is s with every run of separators made one space, trimmed:
// "Fix: bug #3" is "fix bug 3" (for lower-case s).
func words(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return !wordRune(r) }), " ")
}

// phrase is the bonus for the words standing next to each other, in
// order, in the task ("bug 3" in "fix bug 3 in the parser", separators
// aside): phraseWhole when the last ends a word there, phrasePrefix when it
// only starts one ("fix bug 31"); 0 when they are apart or are one word.
func phrase(task string, ws []string) int {
	want := words(strings.Join(ws, " "))
	if !strings.Contains(want, " ") {
		return 0
	}
	switch grade(words(task), want) {
	case gradeWhole:
		return phraseWhole
	case gradePrefix:
		return phrasePrefix
	}
	return 0
}

func all(terms []string, in string) bool {
	for _, t := range terms {
		if !strings.Contains(in, t) {
			return false
		}
	}
	return true
}

func stripStyle(s string) string { return ansi.Strip(s) }
