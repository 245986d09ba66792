package runlist

import (
	"slices"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

// The filter's free words rank the rows they keep: the task first (whole
// words, then word starts, then inside words, with a bonus for the words
// side by side), then the repo, model and status, then the slug; ties in
// the list's order (newest first). Field terms only filter.
func TestFilterRanks(t *testing.T) {
	t.Parallel()
	// The slug of "fix bug 6" is full of 3s; so is its stamp.
	bug6 := spec{slug: slug("fix bug 6", 33333), task: "fix bug 6 in the parser", ago: 1}
	bug13 := spec{slug: slug("fix bug 13", 12), task: "fix bug 13 in the parser", ago: 2}
	bug3 := spec{slug: slug("fix bug 3", 14), task: "fix bug 3 in the parser", ago: 30}
	bug31 := spec{slug: slug("fix bug 31", 15), task: "fix bug 31 in the parser", ago: 3}
	bug3Scattered := spec{slug: slug("bug hunt", 16), task: "bug hunt: 3 failing tests", ago: 4}
	tests := []struct {
		name   string
		specs  []spec
		query  string
		want   []string // keys, in the order shown
		groups bool     // the list keeps its group headings
	}{
		{
			name:  "bug 3: the task's words beat digits in slugs and inside numbers",
			specs: []spec{bug6, bug13, bug3, bug31, bug3Scattered},
			query: "bug 3",
			// fix bug 3 (whole, side by side), fix bug 31 (3 starts a word,
			// side by side), bug hunt: 3 (both whole, apart), fix bug 13
			// (3 inside a word), fix bug 6 (3 only in its slug).
			want: []string{bug3.slug, bug31.slug, bug3Scattered.slug, bug13.slug, bug6.slug},
		},
		{
			name:  "case and order of typing do not matter to the match",
			specs: []spec{bug6, bug3},
			query: "BUG 3",
			want:  []string{bug3.slug, bug6.slug},
		},
		{
			name: "the task beats the repo, model and status, which beat the slug",
			specs: []spec{
				{slug: "coder-notes-1202130000-aaaaaaaa", task: "tidy the readme", ago: 1},                           // "coder" in the slug only
				{slug: "tidy-1202130001-bbbbbbbb", task: "tidy the coder section", ago: 5},                           // in the task
				{slug: "fix-1202130002-cccccccc", task: "fix the totals", ago: 3, verdict: transcript.VerdictAccept}, // in the model (all rows have it)
			},
			query: "coder",
			// Every row has the model qwen/qwen3-coder: the one with it in
			// the task leads, the others tie and keep the list's order.
			want: []string{"tidy-1202130001-bbbbbbbb", "coder-notes-1202130000-aaaaaaaa", "fix-1202130002-cccccccc"},
		},
		{
			name:  "ties keep the list's order: group, then newest first",
			specs: []spec{{slug: "a-old", task: "fix bug 3", ago: 9}, {slug: "b-new", task: "fix bug 3", ago: 1}, {slug: "c-done", task: "fix bug 3", ago: 0, verdict: transcript.VerdictAccept}},
			query: "bug 3",
			want:  []string{"b-new", "a-old", "c-done"},
		},
		{
			name:   "field terms filter and keep the list's order and its groups",
			specs:  []spec{bug6, bug3, {slug: "c-done", task: "fix bug 3", ago: 0, verdict: transcript.VerdictAccept}},
			query:  "status:review",
			want:   []string{bug6.slug, bug3.slug},
			groups: true,
		},
		{
			name:  "field terms and words together: filtered, then ranked",
			specs: []spec{bug6, bug13, bug3, {slug: "c-done", task: "fix bug 3", ago: 0, verdict: transcript.VerdictAccept}},
			query: "is:review bug 3",
			want:  []string{bug3.slug, bug13.slug, bug6.slug},
		},
		{
			name:  "every word must match somewhere",
			specs: []spec{bug6, bug3},
			query: "bug 3 parser nowhere",
			want:  []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newList(t, 100, 30)
			m.SetItems(items(tc.specs...))
			m = press(t, m, "/")
			m = typeText(t, m, tc.query)
			if got := shown(m); !slices.Equal(got, tc.want) {
				t.Fatalf("%q shows\n%v\nwant\n%v", tc.query, got, tc.want)
			}
			if len(tc.want) > 0 && selectedKey(m) != tc.want[0] {
				t.Errorf("cursor on %s, want the best match %s", selectedKey(m), tc.want[0])
			}
			if m.ranked == tc.groups {
				t.Errorf("ranked = %v, want group headings = %v", m.ranked, tc.groups)
			}
		})
	}
}

// grade tells whole words, word starts and insides apart, for words with
// separators of their own and for text that is not ASCII.
func TestGrade(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text, word string
		want       int
	}{
		{"fix bug 3 in the parser", "3", gradeWhole},
		{"fix bug 31", "3", gradePrefix},
		{"fix bug 13", "3", gradeInside},
		{"fix bug 13 and bug 3", "3", gradeWhole},
		{"fix bug 6", "3", 0},
		{"accept --json", "--json", gradeWhole},
		{"accept --json-lines", "--json", gradeWhole}, // json-lines is two words
		{"accept --jsonl", "--json", gradePrefix},
		{"main.go", "main.", gradeWhole},
		{"réparer l'écran", "écran", gradeWhole},
		{"écrans", "écran", gradePrefix},
		{"", "x", 0},
	}
	for _, tc := range tests {
		if got := grade(tc.text, tc.word); got != tc.want {
			t.Errorf("grade(%q, %q) = %d, want %d", tc.text, tc.word, got, tc.want)
		}
	}
}
