package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
)

var (
	literalNaN    = []byte("NaN")
	literalInf    = []byte("Infinity")
	literalNegInf = []byte("-Infinity")
	literalNull   = []byte("null")
)

// finiteJSON rewrites the non-finite number literals NaN, Infinity and
// -Infinity to null wherever they stand outside a string. Servers written
// in Python emit them (json.dumps allows them by default) and
// encoding/json rejects them. Text without them is returned as is.
func finiteJSON(data []byte) []byte {
	if !bytes.Contains(data, literalNaN) && !bytes.Contains(data, literalInf) {
		return data
	}
	out := make([]byte, 0, len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			out = append(out, c)
			continue
		}
		var lit []byte
		switch {
		case c == '"':
			inString = true
		case c == 'N' && bytes.HasPrefix(data[i:], literalNaN):
			lit = literalNaN
		case c == 'I' && bytes.HasPrefix(data[i:], literalInf):
			lit = literalInf
		case c == '-' && bytes.HasPrefix(data[i:], literalNegInf):
			lit = literalNegInf
		}
		if lit != nil {
			out = append(out, literalNull...)
			i += len(lit) - 1
			continue
		}
		out = append(out, c)
	}
	return out
}

// errTrailingData marks a JSON text followed by more than white space.
var errTrailingData = errors.New("invalid character after top-level value")

// decodeJSON decodes one JSON value, with non-finite literals read as null
// and numbers kept as json.Number (so integers stay exact and a tool's
// integer and number parameters can be told apart).
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(finiteJSON(data)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errTrailingData
	}
	return v, nil
}

// countField reads a token count: only finite, non-negative numbers count
// (fractions truncated); anything else, booleans and strings included, is 0.
func countField(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0
	}
	if f >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(f)
}

// positiveInt reads a strictly positive JSON integer; fractions, exponents,
// booleans and strings do not qualify.
func positiveInt(v any) (int, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || i <= 0 || i > math.MaxInt32 {
		return 0, false
	}
	return int(i), true
}

// object returns v as a JSON object.
func object(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	return m, ok
}

// nonEmptyString returns v as a non-empty string.
func nonEmptyString(v any) (string, bool) {
	s, ok := v.(string)
	return s, ok && s != ""
}
