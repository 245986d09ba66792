package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// emptySchema is the input schema of a tool without parameters.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// newParams renders req as a Messages API request (E-60): the system
// texts joined by blank lines in system, the history in strictly
// alternating user and assistant messages, each tool's parameters verbatim
// as its input_schema, temperature only when set (0 included).
func newParams(req provider.Request) sdk.MessageNewParams {
	params := sdk.MessageNewParams{
		Model:     req.Model,
		MaxTokens: int64(req.MaxTokens),
	}
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultMaxTokens
	}
	if req.Temperature != nil {
		params.Temperature = sdk.Float(*req.Temperature)
	}
	var system []string
	var b history
	for _, m := range req.Messages {
		switch m.Role {
		case provider.RoleSystem:
			system = append(system, m.Content)
		case provider.RoleAssistant:
			b.add(sdk.MessageParamRoleAssistant, assistantBlocks(m)...)
		case provider.RoleTool:
			b.add(sdk.MessageParamRoleUser, toolResult(m))
		default:
			if nonBlank(m.Content) {
				b.add(sdk.MessageParamRoleUser, sdk.NewTextBlock(m.Content))
			}
		}
	}
	params.Messages = b.msgs
	if joined := strings.Join(system, "\n\n"); joined != "" {
		params.System = []sdk.TextBlockParam{{Text: joined}}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = emptySchema
		}
		params.Tools = append(params.Tools, sdk.ToolUnionParam{OfTool: &sdk.ToolParam{
			Name:        t.Name,
			Description: sdk.String(t.Description),
			InputSchema: param.Override[sdk.ToolInputSchemaParam](schema),
		}})
	}
	return params
}

// history builds the messages list: a message of the same role as the one
// before joins it, so roles strictly alternate (tool results and a nudge
// after them are one user message).
type history struct {
	msgs []sdk.MessageParam
}

func (h *history) add(role sdk.MessageParamRole, blocks ...sdk.ContentBlockParamUnion) {
	if len(blocks) == 0 {
		// An assistant message with nothing to say (no text, no
		// addressable call) is dropped; its neighbours then join.
		return
	}
	if n := len(h.msgs); n > 0 && h.msgs[n-1].Role == role {
		h.msgs[n-1].Content = append(h.msgs[n-1].Content, blocks...)
		return
	}
	h.msgs = append(h.msgs, sdk.MessageParam{Role: role, Content: blocks})
}

// assistantBlocks are an assistant message's text (when it has any: the
// API refuses blank text blocks) and its addressable calls, each with the
// arguments the model sent.
func assistantBlocks(m provider.Message) []sdk.ContentBlockParamUnion {
	var blocks []sdk.ContentBlockParamUnion
	if nonBlank(m.Content) {
		blocks = append(blocks, sdk.NewTextBlock(m.Content))
	}
	for _, c := range m.ToolCalls {
		if c.ID == "" {
			continue
		}
		blocks = append(blocks, sdk.NewToolUseBlock(c.ID, callInput(c), c.Name))
	}
	return blocks
}

// callInput is a call's input object: the model's own text when it is an
// object, else the decoded arguments, else {} (a call whose arguments did
// not decode was answered with an error; the API needs an object).
func callInput(c provider.ToolCall) json.RawMessage {
	raw := bytes.TrimSpace([]byte(c.RawArguments))
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return raw
	}
	if c.Arguments != nil {
		if data, err := json.Marshal(c.Arguments); err == nil {
			return data
		}
	}
	return json.RawMessage(`{}`)
}

// toolResult answers one call. A blank result has no content block: the
// API refuses blank text blocks.
func toolResult(m provider.Message) sdk.ContentBlockParamUnion {
	block := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
	if nonBlank(m.Content) {
		block.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: m.Content}}}
	}
	return sdk.ContentBlockParamUnion{OfToolResult: &block}
}

func nonBlank(s string) bool { return strings.TrimSpace(s) != "" }
