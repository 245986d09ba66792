package transcript

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
)

// Float is a number a transcript or run.json carries: a non-finite one (a
// NaN or an infinity, which a model server or a clock could produce) is
// written as null, where encoding/json would refuse the whole line and the
// evidence would be lost.
type Float float64

// MarshalJSON writes f, or null when it is not finite.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(x)
}

// String is f as text.
func (f Float) String() string { return strconv.FormatFloat(float64(f), 'g', -1, 64) }

// finiteValues returns v with every non-finite float held in maps, slices,
// arrays, pointers and interfaces replaced by nil: a value of the open
// kind (tool arguments, a run.json update) is made encodable where it
// enters a record. Structs are passed through: their floats are Floats
// where they can be anything else. v itself is not changed.
func finiteValues(v any) any {
	if v == nil {
		return nil
	}
	out, changed := finiteValue(reflect.ValueOf(v), 0)
	if !changed {
		return v
	}
	return out
}

// maxFiniteDepth bounds finiteValue on absurdly nested values.
const maxFiniteDepth = 100

func finiteValue(v reflect.Value, depth int) (any, bool) {
	if depth > maxFiniteDepth {
		return v.Interface(), false
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if x := v.Float(); math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, true
		}
	case reflect.Interface, reflect.Pointer:
		if !v.IsNil() {
			if inner, changed := finiteValue(v.Elem(), depth+1); changed {
				return inner, true
			}
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			break
		}
		out := make(map[string]any, v.Len())
		changed := false
		for it := v.MapRange(); it.Next(); {
			val, c := finiteValue(it.Value(), depth+1)
			changed = changed || c
			out[it.Key().String()] = val
		}
		if changed {
			return out, true
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			break
		}
		out := make([]any, v.Len())
		changed := false
		for i := range v.Len() {
			val, c := finiteValue(v.Index(i), depth+1)
			changed = changed || c
			out[i] = val
		}
		if changed {
			return out, true
		}
	}
	return v.Interface(), false
}
