package engine

import (
	"bytes"
	"encoding/json"
)

// marshalNoEscape encodes v as JSON without HTML escaping, as everything
// dirtywork prints is read by programs and people, not browsers.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// EncodePayload renders the stdout object: one line, no HTML escaping.
func EncodePayload(p *Payload) ([]byte, error) {
	data, err := marshalNoEscape(p)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
