package bench

import (
	"encoding/json"
	"testing"
)

// The expected strings are what python3 prints for the same values.

func TestPyFloatRepr(t *testing.T) {
	t.Parallel()
	tenth, fifth := 0.1, 0.2 // variables: constant arithmetic would be exact
	for x, want := range map[float64]string{
		2: "2.0", 12.3: "12.3", tenth + fifth: "0.30000000000000004", 1e16: "1e+16", 1e15: "1000000000000000.0",
		1e-5: "1e-05", 0.0001: "0.0001", 123456789: "123456789.0", 2.5e-7: "2.5e-07", 1.5e300: "1.5e+300", -12.5: "-12.5",
	} {
		if got := pyFloatRepr(x); got != want {
			t.Errorf("pyFloatRepr(%v) = %q, want %q", x, got, want)
		}
	}
}

func TestPyFormats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{pyFormatG(60), "60"},
		{pyFormatG(60.5), "60.5"},
		{pyFormatG(1234567), "1.23457e+06"},
		{pyFormatG(0.00001234), "1.234e-05"},
		{pyPercent(0.625), "62%"}, // half to even
		{pyPercent(0.375), "38%"},
		{pyPercent(0.005), "0%"},
		{pyPercent(0.015), "2%"}, // 0.015·100 is 1.5 in floating point
		{pyPercent(1.0 / 3), "33%"},
		{pyFixed(0.25, 1), "0.2"},
		{pyFixed(2.75, 1), "2.8"},
		{pyFixed(0.65000000000000002, 1), "0.7"},
		{pyFixed(22.5, 1), "22.5"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if got := pyRound1(3.02); got != 3.0 {
		t.Errorf("pyRound1(3.02) = %v", got)
	}
	if got := pyRound1(5.06) - pyRound1(5.02); pyFixed(got, 1) != "0.1" {
		t.Errorf("round(5.06, 1) - round(5.02, 1) = %v", got)
	}
}

func TestPyStrAndTruth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v      any
		str    string
		truthy bool
	}{
		{nil, "None", false},
		{true, "True", true},
		{false, "False", false},
		{json.Number("3"), "3", true},
		{json.Number("-0"), "0", false},
		{json.Number("0.0"), "0.0", false},
		{json.Number("60.0"), "60.0", true},
		{json.Number("6e1"), "60.0", true},
		{json.Number("123456789012345678901234567890"), "123456789012345678901234567890", true},
		{"", "", false},
		{"accept", "accept", true},
		{[]any{}, "[]", false},
		{[]any{json.Number("1"), "it's", nil}, `[1, "it's", None]`, true},
		{map[string]any{"b": "a\"b", "a": "x\u00a0y\x01\n"}, `{'a': 'x\xa0y\x01\n', 'b': 'a"b'}`, true},
		{map[string]any{}, "{}", false},
	} {
		if got := pyStr(tc.v); got != tc.str {
			t.Errorf("pyStr(%#v) = %q, want %q", tc.v, got, tc.str)
		}
		if got := pyTruthy(tc.v); got != tc.truthy {
			t.Errorf("pyTruthy(%#v) = %v, want %v", tc.v, got, tc.truthy)
		}
	}
}

func TestPySum(t *testing.T) {
	t.Parallel()
	tenths := make([]pyNum, 10)
	for i := range tenths {
		tenths[i] = pyNum{isFloat: true, f: 0.1}
	}
	// CPython 3.12 and later sum floats with compensation: exactly 1.0,
	// where plain addition gives 0.9999999999999999.
	if got := pySum(tenths); got.String() != "1.0" {
		t.Errorf("sum([0.1]*10) = %s", got)
	}
	ints := []pyNum{{i: 2}, {i: 3}}
	if got := pySum(ints); got.isFloat || got.i != 5 {
		t.Errorf("sum([2, 3]) = %s", got)
	}
	mixed := []pyNum{{i: 2}, {isFloat: true, f: 0.5}, {i: 1}}
	if got := pySum(mixed); got.String() != "3.5" {
		t.Errorf("sum([2, 0.5, 1]) = %s", got)
	}
	if got := pySum(nil); got.String() != "0" {
		t.Errorf("sum([]) = %s", got)
	}
}

func TestPyPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"a.jsonl": "a.jsonl", "./a.jsonl": "a.jsonl", "dir//a.jsonl": "dir/a.jsonl", "dir/./a/": "dir/a",
		"../a": "../a", "/x/../y": "/x/../y", "//srv/a": "//srv/a", "///srv/a": "/srv/a", "": ".", ".": ".",
	} {
		if got := pyPath(in); got != want {
			t.Errorf("pyPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatTable(t *testing.T) {
	t.Parallel()
	got := formatTable([]string{"model", "x"}, [][]string{{"é", "1"}, {"long-name", " "}})
	// Widths count characters, not bytes; trailing white space (here the
	// whole last cell) is stripped from every line.
	want := "MODEL      X\né          1\nlong-name"
	if got != want {
		t.Errorf("formatTable =\n%q\nwant\n%q", got, want)
	}
	if got := formatTable([]string{"a"}, nil); got != "A" {
		t.Errorf("empty table = %q", got)
	}
}

func TestPyMeanAndMedian(t *testing.T) {
	t.Parallel()
	var nums []pyNum
	for _, v := range []any{json.Number("10"), true, json.Number("2.5"), "x", nil, json.Number("1e400")} {
		// isinstance(v, (int, float)): a bool is an int; text, None and an
		// out-of-range literal are no numbers here.
		if n, ok := asNumber(v); ok {
			nums = append(nums, n)
		}
	}
	if len(nums) != 3 {
		t.Fatalf("numbers = %v", nums)
	}
	if m := pyMean(nums); m == nil || *m != 13.5/3 {
		t.Errorf("mean = %v", m)
	}
	if m := pyMedian(nums); m == nil || *m != 2.5 {
		t.Errorf("median = %v", m)
	}
	if pyMean(nil) != nil || pyMedian(nil) != nil {
		t.Error("a mean or median of nothing")
	}
}
