package engine

import (
	"bytes"
	"encoding/json"

	"github.com/dirtywork/dirtywork/transcript/termsafe"
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

// EncodePayload renders the stdout object: one line, no HTML escaping,
// and nothing a terminal would act on (the worker's text is in it; see
// termsafe.EncodeJSON). result.json keeps the same bytes.
func EncodePayload(p *Payload) ([]byte, error) {
	return termsafe.EncodeJSON(p)
}
