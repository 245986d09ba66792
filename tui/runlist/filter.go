package runlist

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/dirtywork/dirtywork/tui/runinfo"
)

// query is a parsed filter: field terms (repo:, model:, status:) and free
// words; a row matches when every term does (case-insensitive substrings).
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

func (q query) match(it runinfo.Item) bool {
	if !all(q.repo, strings.ToLower(it.Run.Repo+" "+it.Repo())) {
		return false
	}
	if !all(q.model, strings.ToLower(it.Model())) {
		return false
	}
	status := strings.ToLower(it.StatusText() + " " + string(it.Run.Status) + " " + it.Phase().String() + " " + string(it.Run.Verdict))
	if !all(q.status, status) {
		return false
	}
	if len(q.words) == 0 {
		return true
	}
	text := strings.ToLower(strings.Join([]string{it.Key, it.Task(), it.Repo(), it.Model(), status}, " "))
	return all(q.words, text)
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
