package tools

import (
	"encoding/json"
	"path"
	"strings"
)

// Canonical renders a call's arguments for stall detection (E-28): declared
// parameters only, defaults filled, timeout dropped, numeric strings
// coerced, path trimmed and lexically normalised ("./f.txt" and "f.txt/"
// are "f.txt"; blank is "."), command trimmed, as JSON with sorted keys.
// Arguments that are not an object count as {}; an unknown tool's
// arguments are rendered unchanged.
func Canonical(name string, args any) string {
	s, ok := specByName[name]
	if !ok {
		data, _ := json.Marshal(args)
		return string(data)
	}
	obj, _ := args.(map[string]any)
	out := make(map[string]any, len(s.params))
	for _, p := range s.params {
		if p.name == "timeout" {
			continue
		}
		v, present := obj[p.name]
		if !present {
			v = p.def
		} else if p.nested == nil {
			if cv, msg := checkScalar(p.typ, v, p.name); msg == "" {
				v = cv
			}
		}
		switch p.name {
		case "path":
			if sv, ok := v.(string); ok {
				v = normalisePath(sv)
			}
		case "command":
			if sv, ok := v.(string); ok {
				v = strings.TrimSpace(sv)
			}
		}
		out[p.name] = v
	}
	data, _ := json.Marshal(out) // maps marshal with sorted keys
	return string(data)
}

func normalisePath(p string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return "."
	}
	return path.Clean(p)
}
