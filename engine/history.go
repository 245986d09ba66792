package engine

import (
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// trimmedResult replaces a tool result dropped to fit the context window.
const trimmedResult = "[result trimmed — re-run the tool if needed]"

// Context budget (E-53): the history may hold window × 0.75 tokens, at a
// calibrated number of characters per token (4 until the server has
// reported a prompt size). When it is over, the oldest tool results are
// replaced down to trimTarget of the budget, not just below it: local
// servers reuse their prompt cache only for an unchanged prefix, so one
// deep trim keeps the prefix stable for many turns where trimming a little
// every turn would miss the cache every turn.
const (
	budgetShare      = 0.75
	defaultCharsPerT = 4.0
	trimTarget       = 0.60
	minCharsPerToken = 1.5
	maxCharsPerToken = 8.0
)

// history is the conversation with cached sizes, so a turn costs O(new
// messages), not O(history).
type history struct {
	msgs  []provider.Message
	sizes []int
	total int
	// nextTrim is the first message that may still hold a tool result.
	nextTrim int

	window        int
	charsPerToken float64
	// changed is set when a message already sent was rewritten (trimmed),
	// so the next request does not extend the previous one.
	changed bool
}

func newHistory(window int) *history {
	return &history{window: window, charsPerToken: defaultCharsPerT}
}

// messageSize counts a message as E-53 does: content characters plus each
// tool call's raw-argument characters (or its JSON when raw is empty).
func messageSize(m provider.Message) int {
	n := utf8.RuneCountInString(m.Content)
	for _, c := range m.ToolCalls {
		if c.RawArguments != "" {
			n += utf8.RuneCountInString(c.RawArguments)
		} else {
			data, _ := json.Marshal(c.Arguments)
			n += utf8.RuneCount(data)
		}
	}
	return n
}

func (h *history) add(m provider.Message) {
	s := messageSize(m)
	h.msgs = append(h.msgs, m)
	h.sizes = append(h.sizes, s)
	h.total += s
}

// budget is the history's allowance in characters.
func (h *history) budget() int {
	return int(math.Floor(float64(h.window) * budgetShare * h.charsPerToken))
}

// estTokens estimates the prompt's size in tokens.
func (h *history) estTokens() int {
	return int(math.Ceil(float64(h.total) / h.charsPerToken))
}

// trim makes the history fit the budget. It returns whether it fits and
// how many results it replaced now.
func (h *history) trim() (fits bool, replaced int) {
	budget := h.budget()
	if h.total <= budget {
		return true, 0
	}
	target := int(float64(budget) * trimTarget)
	for i := h.nextTrim; i < len(h.msgs) && h.total > target; i++ {
		m := &h.msgs[i]
		if m.Role != provider.RoleTool || m.Content == trimmedResult {
			continue
		}
		m.Content = trimmedResult
		s := messageSize(*m)
		h.total += s - h.sizes[i]
		h.sizes[i] = s
		replaced++
		h.nextTrim = i + 1
	}
	if replaced > 0 {
		h.changed = true
	}
	return h.total <= budget, replaced
}

// calibrate learns the characters per token from what the server counted
// for a prompt of chars characters.
func (h *history) calibrate(chars, promptTokens int) {
	if promptTokens <= 0 || chars <= 0 {
		return
	}
	r := float64(chars) / float64(promptTokens)
	h.charsPerToken = min(max(r, minCharsPerToken), maxCharsPerToken)
}
