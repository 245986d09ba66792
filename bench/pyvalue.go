package bench

// The original's summarize prints JSON values the way Python prints them
// and aggregates them with Python's arithmetic. Reproducing its output
// byte for byte takes that much of Python: this file is the small part we
// need, over the values encoding/json decodes with UseNumber (nil, bool,
// json.Number, string, []any, map[string]any).

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pyNum is a Python int or float.
type pyNum struct {
	isFloat bool
	i       int64
	f       float64
}

func (n pyNum) float() float64 {
	if n.isFloat {
		return n.f
	}
	return float64(n.i)
}

// String is str(n).
func (n pyNum) String() string {
	if n.isFloat {
		return pyFloatRepr(n.f)
	}
	return strconv.FormatInt(n.i, 10)
}

// asNumber is v as a number when isinstance(v, (int, float)) holds in
// Python: a bool is an int there.
func asNumber(v any) (pyNum, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return pyNum{i: 1}, true
		}
		return pyNum{}, true
	case json.Number:
		n := parseNumber(x)
		// A literal beyond float64's range (1e400) is an infinity in
		// Python too, but it would poison every mean and the JSON output:
		// it counts as no number.
		return n, !n.isFloat || (!math.IsInf(n.f, 0) && !math.IsNaN(n.f))
	}
	return pyNum{}, false
}

// parseNumber reads a JSON number as Python's json module does: an integer
// literal is an int, anything with a fraction or an exponent a float. An
// int too large for int64 is kept as a float (results files hold no such
// number).
func parseNumber(n json.Number) pyNum {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return pyNum{i: i}
		}
	}
	// A literal beyond float64's range is an infinity, as in Python; the
	// range error says nothing more.
	f, _ := strconv.ParseFloat(s, 64)
	return pyNum{isFloat: true, f: f}
}

// pySum is sum(nums) as CPython 3.12 and later compute it: exactly while
// every item is an int, then in floats with Neumaier's compensated
// summation (an int met after a float is added plainly).
func pySum(nums []pyNum) pyNum {
	var acc int64
	for i, n := range nums {
		if n.isFloat {
			return floatSum(float64(acc)+n.f, nums[i+1:])
		}
		next := acc + n.i
		if (n.i > 0 && next < acc) || (n.i < 0 && next > acc) {
			// Python's ints do not overflow; past int64 a float is close.
			return floatSum(float64(acc), nums[i:])
		}
		acc = next
	}
	return pyNum{i: acc}
}

func floatSum(start float64, rest []pyNum) pyNum {
	sum, c := start, 0.0
	for _, n := range rest {
		if !n.isFloat {
			sum += float64(n.i)
			continue
		}
		x := n.f
		t := sum + x
		if math.Abs(sum) >= math.Abs(x) {
			c += (sum - t) + x
		} else {
			c += (x - t) + sum
		}
		sum = t
	}
	if c != 0 && !math.IsInf(c, 0) && !math.IsNaN(c) {
		sum += c
	}
	return pyNum{isFloat: true, f: sum}
}

// pyMean is the original's mean: sum over count, nil for no values.
func pyMean(nums []pyNum) *float64 {
	if len(nums) == 0 {
		return nil
	}
	m := pySum(nums).float() / float64(len(nums))
	return &m
}

// pyMedian is statistics.median: the middle value, or the mean of the two
// middle ones; nil for no values.
func pyMedian(nums []pyNum) *float64 {
	if len(nums) == 0 {
		return nil
	}
	xs := make([]float64, len(nums))
	for i, n := range nums {
		xs[i] = n.float()
	}
	m := median(xs)
	return &m
}

// pyStr is str(v).
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	default:
		return pyRepr(v)
	}
}

// pyRepr is repr(v). An object's keys come out sorted: the decoded map
// kept no order (the original keeps the file's).
func pyRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return parseNumber(x).String()
		}
		// An int of any size, as Python prints it ("-0" is 0).
		if b, ok := new(big.Int).SetString(string(x), 10); ok {
			return b.String()
		}
		return string(x)
	case string:
		return pyStrRepr(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = pyStrRepr(k) + ": " + pyRepr(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		return "?"
	}
}

// pyStrRepr is repr of a str: single quotes unless the text holds a single
// quote and no double one.
func pyStrRepr(s string) string {
	quote := '\''
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		quote = '"'
	}
	var b strings.Builder
	b.WriteRune(quote)
	for _, r := range s {
		switch {
		case r == quote || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case !unicode.IsPrint(r):
			// Go's printable set is Python's: letters, marks, numbers,
			// punctuation, symbols and the ASCII space.
			switch {
			case r < 0x100:
				b.WriteString(`\x` + leftPad(strconv.FormatInt(int64(r), 16), 2))
			case r < 0x10000:
				b.WriteString(`\u` + leftPad(strconv.FormatInt(int64(r), 16), 4))
			default:
				b.WriteString(`\U` + leftPad(strconv.FormatInt(int64(r), 16), 8))
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteRune(quote)
	return b.String()
}

func leftPad(s string, n int) string {
	return strings.Repeat("0", max(0, n-len(s))) + s
}

// pyTruthy is bool(v).
func pyTruthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case json.Number:
		return parseNumber(x).float() != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	default:
		return true
	}
}

// pyFloatRepr is repr of a float: the shortest text that reads back as x,
// in positional notation when its exponent is in [-4, 16), with ".0"
// added to an integral value; in exponent notation otherwise, the
// exponent signed and at least two digits.
func pyFloatRepr(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(x, 'e', -1, 64) // d.ddde±XX
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	if exp >= -4 && exp < 16 {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	sign := "+"
	if exp < 0 {
		sign, exp = "-", -exp
	}
	return mant + "e" + sign + leftPad(strconv.Itoa(exp), 2)
}

// pyFormatG is format(x, "g"): six significant digits, trailing zeros
// dropped, exponent notation below 1e-4 and from 1e6.
func pyFormatG(x float64) string {
	if s, ok := nonFinite(x); ok {
		return s
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// pyFixed is format(x, ".Nf"): rounded half to even on x's exact binary
// value, as both Python and strconv do.
func pyFixed(x float64, decimals int) string {
	if s, ok := nonFinite(x); ok {
		return s
	}
	return strconv.FormatFloat(x, 'f', decimals, 64)
}

// pyPercent is format(x, ".0%"): x times 100 in floating point, then
// rounded to a whole number as ".0f" does, and a percent sign.
func pyPercent(x float64) string {
	return pyFixed(x*100, 0) + "%"
}

func nonFinite(x float64) (string, bool) {
	switch {
	case math.IsNaN(x):
		return "nan", true
	case math.IsInf(x, 1):
		return "inf", true
	case math.IsInf(x, -1):
		return "-inf", true
	}
	return "", false
}

// pyRound1 is round(x, 1): x to the nearest tenth, correctly rounded, half
// to even on the exact value.
func pyRound1(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 1, 64), 64)
	return r
}

// pyPath is str(pathlib.Path(p)) on POSIX: empty and "." components and
// repeated and trailing slashes dropped, ".." kept, exactly two leading
// slashes kept, "." for nothing.
func pyPath(p string) string {
	root := ""
	switch {
	case strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///"):
		root = "//"
	case strings.HasPrefix(p, "/"):
		root = "/"
	}
	var parts []string
	for _, part := range strings.Split(p, "/") {
		if part != "" && part != "." {
			parts = append(parts, part)
		}
	}
	s := root + strings.Join(parts, "/")
	if s == "" {
		return "."
	}
	return s
}

// pyIsSpace is str.isspace for one character: Unicode white space and the
// four ASCII separators \x1c to \x1f, which Python counts too.
func pyIsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// formatTable is the original's fixed-width table: the upper-cased header
// and one line per row, each column padded to its widest cell (counted in
// characters), columns two spaces apart, every line stripped of trailing
// white space, lines joined by newlines (no final one).
func formatTable(columns []string, rows [][]string) string {
	widths := make([]int, len(columns))
	for i, c := range columns {
		widths[i] = utf8.RuneCountInString(c)
		for _, r := range rows {
			widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	header := make([]string, len(columns))
	for i, c := range columns {
		header[i] = strings.ToUpper(c)
	}
	lines := []string{tableLine(header, widths)}
	for _, r := range rows {
		lines = append(lines, tableLine(r, widths))
	}
	return strings.Join(lines, "\n")
}

func tableLine(cells []string, widths []int) string {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(c)
		b.WriteString(strings.Repeat(" ", max(0, widths[i]-utf8.RuneCountInString(c))))
	}
	return strings.TrimRightFunc(b.String(), pyIsSpace)
}
