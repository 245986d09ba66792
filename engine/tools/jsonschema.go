package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// schemaNode is the small subset of JSON Schema the tools use, kept in
// declaration order so the wire form is stable.
type schemaNode struct {
	Type                 string
	Description          string
	Items                *schemaNode
	MinItems, MaxItems   *int
	Properties           []namedSchema
	Required             []string
	AdditionalProperties *bool
}

type namedSchema struct {
	Name   string
	Schema *schemaNode
}

// member and orderedObject marshal a JSON object with keys in the order
// given (encoding/json sorts map keys).
type member struct {
	Key   string
	Value any
}

type orderedObject []member

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MarshalJSON renders the node with keys in a fixed order.
func (n *schemaNode) MarshalJSON() ([]byte, error) {
	o := orderedObject{{"type", n.Type}}
	if n.Description != "" {
		o = append(o, member{"description", n.Description})
	}
	if n.Items != nil {
		o = append(o, member{"items", n.Items})
	}
	if n.MinItems != nil {
		o = append(o, member{"minItems", *n.MinItems})
	}
	if n.MaxItems != nil {
		o = append(o, member{"maxItems", *n.MaxItems})
	}
	if n.Properties != nil {
		props := orderedObject{}
		for _, p := range n.Properties {
			props = append(props, member{p.Name, p.Schema})
		}
		o = append(o, member{"properties", props})
	}
	if n.Required != nil {
		o = append(o, member{"required", n.Required})
	}
	if n.AdditionalProperties != nil {
		o = append(o, member{"additionalProperties", *n.AdditionalProperties})
	}
	return json.Marshal(o)
}

// check validates value against the node, coercing numeric strings at the
// leaves, and returns the coerced value or a path-qualified complaint such
// as "edits[2].new must be string, got int".
func (n *schemaNode) check(value any, at string) (any, string) {
	switch n.Type {
	case "array":
		items, ok := value.([]any)
		if !ok {
			return nil, fmt.Sprintf("%s must be array, got %s", at, pyType(value))
		}
		if n.MinItems != nil && len(items) < *n.MinItems {
			return nil, fmt.Sprintf("%s must have at least %d item(s)", at, *n.MinItems)
		}
		if n.MaxItems != nil && len(items) > *n.MaxItems {
			return nil, fmt.Sprintf("%s must have at most %d item(s)", at, *n.MaxItems)
		}
		out := make([]any, len(items))
		for i, it := range items {
			v, msg := n.Items.check(it, fmt.Sprintf("%s[%d]", at, i))
			if msg != "" {
				return nil, msg
			}
			out[i] = v
		}
		return out, ""
	case "object":
		obj, ok := value.(map[string]any)
		if !ok {
			return nil, fmt.Sprintf("%s must be an object", at)
		}
		for _, r := range n.Required {
			if _, ok := obj[r]; !ok {
				return nil, fmt.Sprintf("%s is missing required property '%s'", at, r)
			}
		}
		out := make(map[string]any, len(obj))
		for k, v := range obj {
			prop := n.property(k)
			if prop == nil {
				if n.AdditionalProperties != nil && !*n.AdditionalProperties {
					return nil, fmt.Sprintf("%s has unexpected property '%s'", at, k)
				}
				out[k] = v
				continue
			}
			cv, msg := prop.check(v, at+"."+k)
			if msg != "" {
				return nil, msg
			}
			out[k] = cv
		}
		return out, ""
	default:
		return checkScalar(n.Type, value, at)
	}
}

func (n *schemaNode) property(name string) *schemaNode {
	for _, p := range n.Properties {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// checkScalar validates a string, integer, number or boolean. Numeric
// strings are coerced ("60" to an integer; "1.5" only to a number); a
// boolean is never numeric; an integer is a number.
func checkScalar(typ string, value any, at string) (any, string) {
	bad := func() (any, string) {
		return nil, fmt.Sprintf("%s must be %s, got %s", at, typ, pyType(value))
	}
	switch typ {
	case "string":
		if s, ok := value.(string); ok {
			return s, ""
		}
		return bad()
	case "boolean":
		if b, ok := value.(bool); ok {
			return b, ""
		}
		return bad()
	case "integer":
		switch v := value.(type) {
		case string:
			if i, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return i, ""
			}
		default:
			if i, ok := asInt(v); ok {
				return i, ""
			}
		}
		return bad()
	case "number":
		switch v := value.(type) {
		case string:
			s := strings.TrimSpace(v)
			if i, err := strconv.Atoi(s); err == nil {
				return i, ""
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				return f, ""
			}
		default:
			if i, ok := asInt(v); ok {
				return i, ""
			}
			if f, ok := asFloat(v); ok {
				return f, ""
			}
		}
		return bad()
	}
	return bad()
}

// asInt accepts JSON integers: a json.Number without fraction or exponent,
// Go integers, and whole float64 values (a decoder without UseNumber cannot
// tell 60 from 60.0).
func asInt(v any) (int, bool) {
	switch n := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(n), ".eE") {
			return 0, false
		}
		i, err := strconv.Atoi(string(n))
		return i, err == nil
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int(n), true
		}
	}
	return 0, false
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

// pyType names a decoded JSON value's type as the original's messages do.
func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case string:
		return "str"
	case bool:
		return "bool"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	if _, ok := asInt(v); ok {
		if _, isFloat := v.(float64); !isFloat {
			return "int"
		}
	}
	return "float"
}
