package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"
)

// stdJSON is encoding/json's output with HTML escaping off, the reference
// the lenient encoder must reproduce for every value without NaN or Inf.
func stdJSON(t *testing.T, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func lenientJSON(v any) (string, error) {
	var e lenientEncoder
	err := e.value(reflect.ValueOf(v), 0)
	return string(e.buf), err
}

type encInner struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
}

type encInnerPtr struct {
	P string `json:"p"`
	Q int
}

type unexportedEmbed struct {
	U string `json:"u"`
}

type (
	encConflictA      struct{ Name string }
	encConflictB      struct{ Name string }
	encTaggedConflict struct {
		Name string `json:"Name"`
	}
)

type encOuter struct {
	encInner                           // promoted
	*encInnerPtr                       // promoted through a pointer
	unexportedEmbed                    // unexported type, exported fields promoted
	Named           encInner           `json:"named"` // embedded-like but named: an object
	Skip            string             `json:"-"`
	Dash            string             `json:"-,"` //nolint:staticcheck // SA5008: a key named "-" is what this field checks
	Quoted          int                `json:"quoted,string"`
	QuotedStr       string             `json:"qs,string"`
	QuotedF         float64            `json:"qf,string,omitempty"`
	OmitZero        time.Time          `json:"oz,omitzero"`
	OmitZeroPtr     *int               `json:"ozp,omitzero"`
	OmitEmptySl     []int              `json:"oes,omitempty"`
	NilSlice        []int              `json:"nil_slice"`
	Bytes           []byte             `json:"bytes"`
	Array           [3]byte            `json:"array"`
	Raw             json.RawMessage    `json:"raw"`
	Num             json.Number        `json:"num"`
	IntKeys         map[int]string     `json:"int_keys"`
	TextKeys        map[netip.Addr]int `json:"text_keys"`
	Iface           any                `json:"iface"`
	When            time.Time          `json:"when"`
	F32             float32            `json:"f32"`
	Floats          []float64          `json:"floats"`
	invalid         int                //nolint:unused // unexported fields are skipped
	Weird           string             `json:"wé ird"`
}

type encConflicts struct {
	encConflictA
	encConflictB // same depth, both untagged: Name disappears
}

type encTagWins struct {
	encConflictA
	encTaggedConflict // tagged wins the tie
}

// ptrMarshaler implements json.Marshaler on the pointer only: encoding/json
// calls it for addressable values and ignores it otherwise.
type ptrMarshaler struct{ N int }

func (p *ptrMarshaler) MarshalJSON() ([]byte, error) { return []byte(`"ptr-marshaled"`), nil }

type holdsPtrMarshaler struct {
	V ptrMarshaler
}

func TestLenientEncoderMatchesEncodingJSON(t *testing.T) {
	seven := 7
	values := map[string]any{
		"nil":          nil,
		"string":       `<b> & "q" \ é 日本 🎉 ` + "\x00\x1f\u2028\u2029\xff",
		"ints":         []any{0, -1, int8(-8), uint64(math.MaxUint64), int64(math.MinInt64)},
		"floats":       []float64{0, math.Copysign(0, -1), 1, 0.1, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, -2.5e-10, math.MaxFloat64, math.SmallestNonzeroFloat64},
		"float32s":     []float32{0, 0.1, 1e20, 1e21, 1e-6, 1e-7, 3.4e38},
		"bools":        []bool{true, false},
		"map any":      map[string]any{"z": 1, "a": []any{"x", nil, 2.5}, "m": map[string]any{}},
		"nil map":      map[string]int(nil),
		"events":       []Event{RunStart{Task: "t", Temperature: new(0.7)}, RunEnd{Artifacts: &Artifacts{}}, Verify{ExitCode: &seven}},
		"run end nil":  RunEnd{Status: "x"},
		"outer":        encOuter{encInner: encInner{A: 1}, Named: encInner{B: "b"}, Quoted: 5, QuotedStr: `s"`, QuotedF: 1.5, NilSlice: nil, Bytes: []byte("hi\x00"), Array: [3]byte{1, 2, 3}, Raw: json.RawMessage(` { "k" : [1, 2] } `), Num: "12.5e3", IntKeys: map[int]string{10: "a", -2: "b", 3: "c"}, TextKeys: map[netip.Addr]int{netip.MustParseAddr("10.0.0.1"): 1, netip.MustParseAddr("1.2.3.4"): 2}, Iface: map[string]any{"n": 1}, When: testTime, F32: 0.3, Floats: []float64{1, 2}, Weird: "w"},
		"outer ptrs":   &encOuter{encInnerPtr: &encInnerPtr{P: "p", Q: 2}, OmitZero: testTime, OmitZeroPtr: &seven, OmitEmptySl: []int{1}, unexportedEmbed: unexportedEmbed{U: "u"}},
		"conflicts":    encConflicts{encConflictA{"a"}, encConflictB{"b"}},
		"tag wins":     encTagWins{encConflictA{"a"}, encTaggedConflict{"t"}},
		"ptr marshal":  &holdsPtrMarshaler{}, // addressable: method used
		"val marshal":  holdsPtrMarshaler{},  // not addressable: plain struct
		"in interface": []any{holdsPtrMarshaler{}, &ptrMarshaler{}},
		"empty struct": struct{}{},
		"anon struct":  struct{ X, Y int }{1, 2},
		"nil ptr":      (*encInner)(nil),
		"ptr ptr":      new(new(3)),
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			want := stdJSON(t, v)
			got, err := lenientJSON(v)
			if err != nil {
				t.Fatalf("lenient encoder: %v", err)
			}
			if got != want {
				t.Fatalf("lenient encoder differs from encoding/json\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestMarshalJSONNonFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"bare NaN", nan, `null`},
		{"float32 Inf", float32(inf), `null`},
		{"slice", []float64{1, nan, -inf}, `[1,null,null]`},
		{"map", map[string]any{"b": inf, "a": "<&>"}, `{"a":"<&>","b":null}`},
		{"struct", ModelProgress{Turn: 1, Tokens: 2, TokensPerS: nan}, `{"turn":1,"tokens":2,"tokens_per_s":null}`},
		{"quoted", struct {
			F float64 `json:"f,string"`
		}{inf}, `{"f":null}`},
		{"omitempty keeps NaN", struct {
			F float64 `json:"f,omitempty"`
			G float64 `json:"g,omitempty"`
		}{nan, 0}, `{"f":null}`},
		{"marshaler that fails on NaN", struct {
			R json.Marshaler `json:"r"`
			S string         `json:"s"`
		}{nanMarshaler{}, "kept"}, `{"r":null,"s":"kept"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := marshalJSON(tc.v)
			if err != nil {
				t.Fatalf("marshalJSON: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// nanMarshaler is a foreign Marshaler that itself trips over a NaN.
type nanMarshaler struct{}

func (nanMarshaler) MarshalJSON() ([]byte, error) { return json.Marshal(math.NaN()) }

func TestMarshalJSONRefusesCyclesAndUnsupportedTypes(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	if _, err := marshalJSON(cyclic); !errors.Is(err, errEncodeTooDeep) {
		t.Errorf("cyclic value: got %v, want errEncodeTooDeep", err)
	}
	withNaN := map[string]any{"a": math.NaN(), "z": make(chan int)}
	var unsupported *json.UnsupportedTypeError
	if _, err := marshalJSON(withNaN); !errors.As(err, &unsupported) {
		t.Errorf("channel next to a NaN: got %v, want UnsupportedTypeError", err)
	}
}
