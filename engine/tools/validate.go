package tools

import (
	"fmt"
	"strings"
)

// validate checks args against the tool's parameters: missing required
// ones are named, unknown top-level keys are dropped, scalars are checked
// and coerced, an explicit null is accepted only where the default is
// null, nested schemas are enforced, and defaults are filled. It returns
// the validated arguments or the detail of the first problem.
func (s *spec) validate(args map[string]any) (map[string]any, string) {
	var missing []string
	for _, p := range s.params {
		if _, ok := args[p.name]; !ok && p.required {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		return nil, "missing required parameter(s): " + strings.Join(missing, ", ")
	}
	out := make(map[string]any, len(s.params))
	for _, p := range s.params {
		v, present := args[p.name]
		switch {
		case !present:
			out[p.name] = p.def
		case v == nil && p.nullable:
			out[p.name] = nil
		case p.nested != nil:
			cv, msg := p.nested.check(v, p.name)
			if msg != "" {
				return nil, msg
			}
			out[p.name] = cv
		default:
			cv, msg := checkScalar(p.typ, v, p.name)
			if msg != "" {
				return nil, msg
			}
			out[p.name] = cv
		}
	}
	if s.inputCap > 0 {
		if n := stringBytes(out); n > s.inputCap {
			return nil, fmt.Sprintf("input is %d bytes, over the %d-byte limit.", n, s.inputCap)
		}
	}
	return out, ""
}

// stringBytes adds up the UTF-8 bytes of every string value (not keys)
// in v, recursively.
func stringBytes(v any) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case []any:
		n := 0
		for _, e := range x {
			n += stringBytes(e)
		}
		return n
	case map[string]any:
		n := 0
		for _, e := range x {
			n += stringBytes(e)
		}
		return n
	}
	return 0
}
