package export

import (
	"bytes"
	"strconv"
)

const (
	// hunkContext is the unified diff's context, git's default.
	hunkContext = 3
	// funcNameMax is the most of a function line git shows after a hunk
	// header, and hunkHeaderMax the size of git's header buffer.
	funcNameMax   = 80
	hunkHeaderMax = 128
	noNewline     = "\\ No newline at end of file\n"
)

// lineCounts are a text file's inserted and deleted lines.
type lineCounts struct {
	added, deleted int
}

// textDiff diffs old against new line by line and, when out is not nil,
// writes the unified hunks git would (3 lines of context, function names
// from git's default rule, never a driver's). It returns the counts for
// the stat either way.
func textDiff(old, new []byte, out *bytes.Buffer) lineCounts {
	x, y, script := diffRecords(splitRecords(old), splitRecords(new))
	var c lineCounts
	for _, ch := range script {
		c.added += ch.n2
		c.deleted += ch.n1
	}
	if out != nil {
		writeHunks(out, x, y, script)
	}
	return c
}

// writeHunks groups the script into hunks (changes at most twice the
// context apart share one) and writes them.
func writeHunks(out *bytes.Buffer, x, y *lineSide, script []lineScript) {
	funcLine := []byte(nil)
	searchedDown := -1
	for first := 0; first < len(script); {
		last := first
		for last+1 < len(script) && script[last+1].i1-(script[last].i1+script[last].n1) <= 2*hunkContext {
			last++
		}
		a, z := script[first], script[last]
		s1 := max(a.i1-hunkContext, 0)
		s2 := max(a.i2-hunkContext, 0)
		post := min(hunkContext, len(x.recs)-(z.i1+z.n1), len(y.recs)-(z.i2+z.n2))
		e1 := z.i1 + z.n1 + post
		e2 := z.i2 + z.n2 + post

		// The function line is the nearest old line above the hunk
		// that git's default rule takes; lines searched for an earlier
		// hunk need not be searched again.
		for l := s1 - 1; l > searchedDown && l >= 0; l-- {
			if f, ok := defaultFuncName(x.recs[l]); ok {
				funcLine = f
				break
			}
		}
		searchedDown = s1 - 1
		writeHunkHeader(out, s1+1, e1-s1, s2+1, e2-s2, funcLine)

		for ; s2 < a.i2; s2++ {
			writeRecord(out, ' ', y.recs[s2])
		}
		for k := first; ; k++ {
			ch := script[k]
			for i := ch.i1; i < ch.i1+ch.n1; i++ {
				writeRecord(out, '-', x.recs[i])
			}
			for i := ch.i2; i < ch.i2+ch.n2; i++ {
				writeRecord(out, '+', y.recs[i])
			}
			if k == last {
				break
			}
			for i := ch.i2 + ch.n2; i < script[k+1].i2; i++ {
				writeRecord(out, ' ', y.recs[i])
			}
		}
		for i := z.i2 + z.n2; i < e2; i++ {
			writeRecord(out, ' ', y.recs[i])
		}
		first = last + 1
	}
}

// defaultFuncName is git's rule without a diff driver: a line starting
// with a letter, '_' or '$', cut to 80 bytes, trailing whitespace dropped.
func defaultFuncName(rec []byte) ([]byte, bool) {
	if len(rec) == 0 {
		return nil, false
	}
	if c := rec[0]; !isIdentStart(c) {
		return nil, false
	}
	rec = rec[:min(len(rec), funcNameMax)]
	for len(rec) > 0 && isCSpace(rec[len(rec)-1]) {
		rec = rec[:len(rec)-1]
	}
	return rec, true
}

// isIdentStart is C's isalpha in the C locale, or '_' or '$'.
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// writeHunkHeader writes "@@ -s1,c1 +s2,c2 @@ func", leaving out a count
// of one and giving an empty side's start as the line before it, and
// cutting the function name to git's header buffer.
func writeHunkHeader(out *bytes.Buffer, s1, c1, s2, c2 int, funcLine []byte) {
	var hdr []byte
	hdr = append(hdr, "@@ -"...)
	hdr = appendRange(hdr, s1, c1)
	hdr = append(hdr, " +"...)
	hdr = appendRange(hdr, s2, c2)
	hdr = append(hdr, " @@"...)
	if len(funcLine) > 0 {
		hdr = append(hdr, ' ')
		room := hunkHeaderMax - len(hdr) - 1
		hdr = append(hdr, funcLine[:min(len(funcLine), room)]...)
	}
	hdr = append(hdr, '\n')
	out.Write(hdr)
}

func appendRange(b []byte, start, count int) []byte {
	if count == 0 {
		start--
	}
	b = strconv.AppendInt(b, int64(start), 10)
	if count != 1 {
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(count), 10)
	}
	return b
}

// writeRecord writes one diff line, marking a last line with no newline.
func writeRecord(out *bytes.Buffer, prefix byte, rec []byte) {
	out.WriteByte(prefix)
	out.Write(rec)
	if len(rec) == 0 || rec[len(rec)-1] != '\n' {
		out.WriteString("\n" + noNewline)
	}
}
