package engine

import (
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/dirtywork/dirtywork/engine/provider"
)

// trimmedResult replaces a tool result dropped to fit the context window.
const trimmedResult = "[result trimmed — re-run the tool if needed]"

// Context budget (E-53, with its arithmetic changed). Until the server has
// reported a plausible prompt size, the history may hold window × 0.75
// tokens at 4 characters per token, counted as E-53 counts. Once it has,
// the budget is the window less room for the reply (max_tokens, at most
// half the window), and the next prompt's size is the server's count for
// the previous request plus an estimate of only the messages added since:
// the count covers the tool schemas and the chat template, which no
// character estimate sees.
//
// Trimming happens only when the next request would not fit. A local
// server reuses its prompt cache only for an unchanged prefix, so a trim
// costs a prefill of everything after the first rewritten message: about
// what it keeps of the tool results. So a trim goes deep, replacing whole
// turns' results oldest-first until those left take at most keepShare of
// the budget; its extra prefill is then small next to the turns the freed
// room holds before the next trim. The newest turn's results, which the
// model has not seen, are replaced only when nothing else makes it fit.
const (
	budgetShare      = 0.75
	defaultCharsPerT = 4.0
	keepShare        = 0.15
	minCharsPerToken = 1.5
	maxCharsPerToken = 8.0
	// msgTokens is a message's framing in the chat template, beyond what
	// its characters cost.
	msgTokens = 4
)

// history is the conversation with cached sizes, so a turn costs O(new
// messages), not O(history).
type history struct {
	msgs []provider.Message
	// sizes are E-53 sizes in characters; toks are token estimates,
	// corrected from the server's counts.
	sizes []int
	toks  []int
	total int
	// kept sums the sizes and toks of the tool results not yet replaced.
	keptChars, keptToks int
	// nextTrim is the first message that may still hold a tool result.
	nextTrim int

	window int
	// reply is the request's max_tokens; 0 when the server decides.
	reply         int
	charsPerToken float64

	// counted is the server's count for msgs[:countedN] as they are now
	// (adjusted by the estimate of what trims changed since); pending
	// sums the estimates of msgs[countedN:]. counted is 0 until the
	// server reports a plausible count.
	counted, countedN, countedChars int
	pending                         int
	// retrimmed is set when a trim rewrote messages since the last count,
	// so the next count does not measure only the messages added.
	retrimmed bool
	// learned is set once two counts have measured charsPerToken.
	learned bool
	// changed is set when a message already sent was rewritten (trimmed),
	// so the next request does not extend the previous one.
	changed bool
}

func newHistory(window int) *history {
	return &history{window: window, charsPerToken: defaultCharsPerT}
}

// withReply sets the room kept for the reply: the request's max_tokens.
func (h *history) withReply(maxTokens int) *history {
	h.reply = maxTokens
	return h
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

// guess estimates a message of size characters in tokens.
func (h *history) guess(size int) int {
	return msgTokens + int(math.Ceil(float64(size)/h.charsPerToken))
}

func (h *history) add(m provider.Message) {
	s := messageSize(m)
	t := h.guess(s)
	h.msgs = append(h.msgs, m)
	h.sizes = append(h.sizes, s)
	h.toks = append(h.toks, t)
	h.total += s
	h.pending += t
	if m.Role == provider.RoleTool && m.Content != trimmedResult {
		h.keptChars += s
		h.keptToks += t
	}
}

// counting says whether the budget is in the server's tokens.
func (h *history) counting() bool { return h.counted > 0 }

// budget is the history's allowance: tokens when counting, else
// characters.
func (h *history) budget() int {
	if h.counting() {
		return h.window - h.replyRoom()
	}
	return int(math.Floor(float64(h.window) * budgetShare * defaultCharsPerT))
}

// replyRoom is the room kept for the reply when counting.
func (h *history) replyRoom() int {
	if h.reply <= 0 {
		return h.window / 4
	}
	return min(h.reply, h.window/2)
}

// load is the next prompt's size in the budget's unit.
func (h *history) load() int {
	if h.counting() {
		return h.counted + h.pending
	}
	return h.total
}

// keptLoad is what the unreplaced tool results take, in the budget's unit.
func (h *history) keptLoad() int {
	if h.counting() {
		return h.keptToks
	}
	return h.keptChars
}

// estTokens estimates the prompt's size in tokens.
func (h *history) estTokens() int {
	if h.counting() {
		return h.counted + h.pending
	}
	return int(math.Ceil(float64(h.total) / h.charsPerToken))
}

// trim makes the history fit the budget. It returns whether it fits and
// how many results it replaced now.
func (h *history) trim() (fits bool, replaced int) {
	budget := h.budget()
	if h.load() <= budget {
		return true, 0
	}
	newest := len(h.msgs)
	for newest > 0 && h.msgs[newest-1].Role == provider.RoleTool {
		newest--
	}
	target := int(float64(budget) * keepShare)
	for i := h.nextTrim; i < len(h.msgs); i++ {
		m := &h.msgs[i]
		if m.Role != provider.RoleTool || m.Content == trimmedResult {
			continue
		}
		// Stop only between turns: one turn's results go together.
		startsTurn := i == 0 || h.msgs[i-1].Role != provider.RoleTool
		if startsTurn && h.load() <= budget && (i >= newest || h.keptLoad() <= target) {
			break
		}
		h.replace(i)
		replaced++
		h.nextTrim = i + 1
	}
	if replaced > 0 {
		h.changed = true
		h.retrimmed = true
	}
	return h.load() <= budget, replaced
}

// replace puts the trimmed stub in place of tool result i.
func (h *history) replace(i int) {
	m := &h.msgs[i]
	m.Content = trimmedResult
	s := messageSize(*m)
	t := h.guess(s)
	h.total += s - h.sizes[i]
	h.keptChars -= h.sizes[i]
	h.keptToks -= h.toks[i]
	if i < h.countedN {
		h.counted += t - h.toks[i]
		h.countedChars += s - h.sizes[i]
	} else {
		h.pending += t - h.toks[i]
	}
	h.sizes[i] = s
	h.toks[i] = t
}

// sentMark is what a request held when it was sent.
type sentMark struct{ n, chars int }

// mark records what the request about to be sent holds.
func (h *history) mark() sentMark { return sentMark{len(h.msgs), h.total} }

// calibrate learns from the server's count of the prompt sent at mark.
// A count below what the prompt's characters could make at 8 characters
// per token, or below the count of a prompt this one extends, is not a
// count of the whole prompt (servers have reported only what they did not
// have cached): it is ignored, and the budget goes back to characters
// until a plausible count arrives.
func (h *history) calibrate(at sentMark, promptTokens int) {
	if promptTokens <= 0 {
		return
	}
	extends := h.counting() && !h.retrimmed && at.n > h.countedN
	if float64(promptTokens) < float64(at.chars)/maxCharsPerToken || (extends && promptTokens < h.counted) {
		h.counted = 0
		return
	}
	if extends && at.chars > h.countedChars {
		h.learn(at, promptTokens-h.counted)
	} else if r := float64(at.chars) / float64(promptTokens); !h.learned && r < h.charsPerToken {
		// The count includes the tool schemas, so this ratio is low:
		// safe for estimating until two counts measure the difference.
		h.charsPerToken = max(r, minCharsPerToken)
	}
	h.counted, h.countedN, h.countedChars = promptTokens, at.n, at.chars
	h.pending = 0
	for _, t := range h.toks[at.n:] {
		h.pending += t
	}
	h.retrimmed = false
}

// learn takes the characters per token from the messages added between
// the last count and this one (delta tokens), and spreads delta over them
// by size, so a later trim takes off what they really cost.
func (h *history) learn(at sentMark, delta int) {
	from, chars := h.countedN, at.chars-h.countedChars
	framing := msgTokens * (at.n - from)
	if delta <= framing {
		return
	}
	r := float64(chars) / float64(delta-framing)
	h.charsPerToken = min(max(r, minCharsPerToken), maxCharsPerToken)
	h.learned = true
	left, leftChars := delta-framing, chars
	for i := from; i < at.n; i++ {
		share := 0
		if leftChars > 0 {
			share = int(math.Round(float64(left) * float64(h.sizes[i]) / float64(leftChars)))
		}
		left -= share
		leftChars -= h.sizes[i]
		t := msgTokens + share
		if h.msgs[i].Role == provider.RoleTool && h.msgs[i].Content != trimmedResult {
			h.keptToks += t - h.toks[i]
		}
		h.toks[i] = t
	}
}
