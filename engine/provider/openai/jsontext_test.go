package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestFiniteJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":NaN,"b":Infinity,"c":-Infinity}`:      `{"a":null,"b":null,"c":null}`,
		`[NaN, -Infinity ,Infinity]`:                `[null, null ,null]`,
		`{"s":"NaN Infinity -Infinity"}`:            `{"s":"NaN Infinity -Infinity"}`,
		`{"s":"quote \" NaN \\","t":NaN}`:           `{"s":"quote \" NaN \\","t":null}`,
		`{"NaN":1,"Infinity":[Infinity]}`:           `{"NaN":1,"Infinity":[null]}`,
		`{"plain":-1.5e3,"ok":true,"nothing":null}`: `{"plain":-1.5e3,"ok":true,"nothing":null}`,
	} {
		if got := string(finiteJSON([]byte(in))); got != want {
			t.Errorf("finiteJSON(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestDecodeJSONKeepsNumbersExact(t *testing.T) {
	v, err := decodeJSON([]byte(` {"big":9007199254740993,"f":1.50} `))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"big": json.Number("9007199254740993"), "f": json.Number("1.50")}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("decoded %#v", v)
	}
	for _, bad := range []string{``, `{`, `{} []`, `nan`} {
		if _, err := decodeJSON([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func TestCountFieldAndPositiveInt(t *testing.T) {
	for _, tc := range []struct {
		v        any
		count    int
		positive int
	}{
		{json.Number("12"), 12, 12},
		{json.Number("12.7"), 12, 0},
		{json.Number("1e3"), 1000, 0},
		{json.Number("0"), 0, 0},
		{json.Number("-3"), 0, 0},
		{true, 0, 0},
		{"12", 0, 0},
		{nil, 0, 0},
	} {
		if got := countField(tc.v); got != tc.count {
			t.Errorf("countField(%#v) = %d, want %d", tc.v, got, tc.count)
		}
		got, ok := positiveInt(tc.v)
		if got != tc.positive || ok != (tc.positive > 0) {
			t.Errorf("positiveInt(%#v) = %d, %v", tc.v, got, ok)
		}
	}
}
