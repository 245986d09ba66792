package export

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// statWidth is the width git lays the stat out in when its output
	// is not a terminal.
	statWidth = 80
	// StatCap is the most characters of diff_stat kept.
	StatCap = 64000
	// statCutMarker follows a diff_stat cut at StatCap.
	statCutMarker = "\n[diff_stat truncated at 64000 chars]"
)

// statEntry is one line of the stat: a path's inserted and deleted lines,
// or, for a binary file, its new and old sizes (zero, zero when only the
// mode changed).
type statEntry struct {
	name           string // as git prints it, quoted when it must be
	added, deleted int64
	binary         bool
}

// renderStat lays the entries out as `git diff --stat` does for a
// non-terminal: names padded or cut from the left to fit, change counts
// right-aligned, the +/- bar scaled so the largest change fills the room
// left, and the summary line. No entries, no output.
func renderStat(entries []statEntry) string {
	if len(entries) == 0 {
		return ""
	}
	var maxLen, numberWidth, binWidth int
	var maxChange int64
	for _, e := range entries {
		maxLen = max(maxLen, utf8.RuneCountInString(e.name))
		if e.binary {
			binWidth = max(binWidth, 14+decimalWidth(e.added)+decimalWidth(e.deleted))
			numberWidth = 3
			continue
		}
		maxChange = max(maxChange, e.added+e.deleted)
	}
	width := statWidth
	numberWidth = max(decimalWidth(maxChange), numberWidth)
	width = max(width, 16+6+numberWidth)

	// Wanted sizes first, then shrink to the width: the bar gets at
	// most 3/8 of it, the name what is left.
	graphWidth := int(maxChange)
	if maxChange+4 <= int64(binWidth) {
		graphWidth = binWidth - 4
	}
	nameWidth := maxLen
	if int64(nameWidth)+int64(numberWidth)+6+int64(graphWidth) > int64(width) {
		if graphWidth > width*3/8-numberWidth-6 {
			graphWidth = max(width*3/8-numberWidth-6, 6)
		}
		if nameWidth > width-numberWidth-6-graphWidth {
			nameWidth = width - numberWidth - 6 - graphWidth
		} else {
			graphWidth = width - numberWidth - 6 - nameWidth
		}
	}

	var sb strings.Builder
	var files int
	var adds, dels int64
	for _, e := range entries {
		files++
		prefix, name, padding := fitName(e.name, nameWidth)
		fmt.Fprintf(&sb, " %s%s%*s | ", prefix, name, padding, "")
		if e.binary {
			fmt.Fprintf(&sb, "%*s", numberWidth, "Bin")
			if e.added != 0 || e.deleted != 0 {
				fmt.Fprintf(&sb, " %d -> %d bytes", e.deleted, e.added)
			}
			sb.WriteByte('\n')
			continue
		}
		adds += e.added
		dels += e.deleted
		add, del := e.added, e.deleted
		if int64(graphWidth) <= maxChange {
			total := scaleLinear(add+del, graphWidth, maxChange)
			if total < 2 && add > 0 && del > 0 {
				total = 2
			}
			if add < del {
				add = scaleLinear(add, graphWidth, maxChange)
				del = total - add
			} else {
				del = scaleLinear(del, graphWidth, maxChange)
				add = total - del
			}
		}
		fmt.Fprintf(&sb, "%*d", numberWidth, e.added+e.deleted)
		if e.added+e.deleted != 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(strings.Repeat("+", int(add)))
		sb.WriteString(strings.Repeat("-", int(del)))
		sb.WriteByte('\n')
	}
	sb.WriteString(statSummary(files, adds, dels))
	return sb.String()
}

// fitName cuts a name wider than width from the left, behind "...", and
// then back to its first '/' so the reader sees whole components.
func fitName(name string, width int) (prefix, shown string, padding int) {
	n := utf8.RuneCountInString(name)
	room := width
	if width < n {
		prefix = "..."
		room = max(room-3, 0)
		for n > room {
			_, size := utf8.DecodeRuneInString(name)
			name = name[size:]
			n--
		}
		if i := strings.IndexByte(name, '/'); i >= 0 {
			name = name[i:]
		}
	}
	return prefix, name, max(room-utf8.RuneCountInString(name), 0)
}

// scaleLinear scales a count to the bar, at least one column for any
// change: it scales to one column fewer and adds one.
func scaleLinear(it int64, width int, maxChange int64) int64 {
	if it == 0 {
		return 0
	}
	return 1 + it*int64(width-1)/maxChange
}

func decimalWidth(n int64) int {
	return len(strconv.FormatInt(n, 10))
}

// statSummary is git's last stat line: a zero count is left out unless
// both are zero.
func statSummary(files int, adds, dels int64) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, " %d %s changed", files, plural(int64(files), "file", "files"))
	if adds != 0 || dels == 0 {
		fmt.Fprintf(&sb, ", %d %s(+)", adds, plural(adds, "insertion", "insertions"))
	}
	if dels != 0 || adds == 0 {
		fmt.Fprintf(&sb, ", %d %s(-)", dels, plural(dels, "deletion", "deletions"))
	}
	sb.WriteByte('\n')
	return sb.String()
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// capStat keeps the first StatCap characters of a stat and marks the cut.
func capStat(s string) string {
	if utf8.RuneCountInString(s) <= StatCap {
		return s
	}
	n := 0
	for i := range s {
		if n == StatCap {
			return s[:i] + statCutMarker
		}
		n++
	}
	return s
}
