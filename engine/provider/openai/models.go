package openai

import (
	"context"
	"fmt"
	"net/http"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// ListModels returns the ids the server lists at GET {base}/models
// (data[].id). It is preflight's first contact with the server, so it
// fails fast: one try, never longer than PreflightTimeout even when ctx
// allows more, so a server that accepts connections and never answers
// cannot hang the command.
func (p *Provider) ListModels(ctx context.Context) ([]string, error) {
	target, err := p.endpoint("/models")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	data, err := p.fetch(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	return parseModelList(data, target)
}

// parseModelList reads {"data": [{"id": ...}, ...]}; every entry must be
// an object with a string id.
func parseModelList(data []byte, target string) ([]string, error) {
	v, err := decodeJSON(data)
	if err != nil {
		return nil, &provider.Error{Msg: fmt.Sprintf("invalid JSON from %s: %v", target, err), Err: err}
	}
	top, _ := object(v)
	list, ok := top["data"].([]any)
	if !ok {
		return nil, malformedList(target, "no data list")
	}
	ids := make([]string, 0, len(list))
	for i, e := range list {
		entry, _ := object(e)
		id, ok := entry["id"].(string)
		if !ok {
			return nil, malformedList(target, fmt.Sprintf("data[%d] has no string id", i))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func malformedList(target, detail string) *provider.Error {
	return &provider.Error{Msg: fmt.Sprintf("malformed model list from %s (%s)", target, detail), Malformed: true}
}
