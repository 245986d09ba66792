package anthropic

import (
	"context"
	"fmt"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// maxModelPages bounds the model listing against a server that never says
// it has no more.
const maxModelPages = 20

// ListModels returns the ids GET {base}/v1/models lists (data[].id),
// every page of them: the API pages by 20 by default, more models than
// that are served, and preflight refuses a model it does not find. It
// fails fast: one try, never longer than PreflightTimeout.
func (p *Provider) ListModels(ctx context.Context) ([]string, error) {
	if err := p.ready(); err != nil {
		return nil, err
	}
	target := p.endpoint("/v1/models")
	ctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
	defer cancel()
	page, err := p.client.Models.List(ctx, sdk.ModelListParams{Limit: sdk.Int(1000)})
	var ids []string
	for n := 0; err == nil && page != nil && n < maxModelPages; n++ {
		if !isList(page.JSON.Data) {
			return nil, &provider.Error{Msg: fmt.Sprintf("malformed model list from %s (no data list)", target), Malformed: true}
		}
		for i, m := range page.Data {
			id := stringField(m.JSON.ID)
			if id == "" {
				return nil, &provider.Error{Msg: fmt.Sprintf("malformed model list from %s (data[%d] has no string id)", target, i), Malformed: true}
			}
			ids = append(ids, id)
		}
		page, err = page.GetNextPage()
	}
	if err != nil {
		return nil, classify(ctx, target, err, false)
	}
	return ids, nil
}
