package transcript

import (
	"bytes"
	"encoding/json"
)

// marshalJSON encodes v like encoding/json with HTML escaping off: a
// transcript and run.json keep <, > and & as they are. Values are made
// encodable where they enter (Float, finiteValues), so a non-finite
// number never costs an event.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// appendJSONString appends s as a JSON string, HTML characters as they are.
func appendJSONString(dst []byte, s string) []byte {
	b, _ := marshalJSON(s) // a string always encodes
	return append(dst, b...)
}
