package runlist

import (
	"slices"
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
// then the phrase bonus.
func (q query) score(it runinfo.Item) (int, bool) {
	if !all(q.repo, strings.ToLower(it.Run.Repo+" "+it.Repo())) {
		return 0, false
	}
	if !all(q.model, strings.ToLower(it.Model())) {
		return 0, false
	}
	status := strings.ToLower(it.StatusText() + " " + string(it.Run.Status) + " " + it.Phase().String() + " " + string(it.Run.Verdict))
	if !all(q.status, status) {
		return 0, false
	}
	if len(q.words) == 0 {
		return 0, true
	}
	task := strings.ToLower(it.Task())
	others := [...]string{strings.ToLower(it.Repo()), strings.ToLower(it.Model()), status}
	key := strings.ToLower(it.Key)
	total := 0
	for _, w := range q.words {
		best := 0
		if g := grade(task, w); g > 0 {
			best = tierTask + g
		} else {
			for _, f := range others {
				if g := grade(f, w); g > 0 {
					best = max(best, tierOther+g)
				}
			}
			if best == 0 {
				if g := grade(key, w); g > 0 {
					best = tierKey + g
				}
			}
		}
		if best == 0 {
			return 0, false
		}
		total += best
	}
	return total + phrase(task, q.words), true
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

// tokens splits s into its words (runs of letters and digits).
func tokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !wordRune(r) })
}

// phrase is the bonus for the words' tokens standing next to each other,
// in order, among the task's: phraseWhole when the last matches a whole
// word, phrasePrefix when only the start of one; 0 for a single token.
func phrase(task string, words []string) int {
	var want []string
	for _, w := range words {
		want = append(want, tokens(w)...)
	}
	if len(want) < 2 {
		return 0
	}
	have := tokens(task)
	best := 0
	last := len(want) - 1
	for i := 0; i+len(want) <= len(have); i++ {
		if !slices.Equal(have[i:i+last], want[:last]) {
			continue
		}
		switch {
		case have[i+last] == want[last]:
			return phraseWhole
		case strings.HasPrefix(have[i+last], want[last]):
			best = phrasePrefix
		}
	}
	return best
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
