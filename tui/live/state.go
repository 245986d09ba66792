package live

import (
	"strings"
	"time"

	"github.com/dirtywork/dirtywork/transcript"
)

// State is a run as its transcript tells it so far.
type State struct {
	Start    Start
	HasStart bool
	Turn     int
	// Usage sums the replies' token counts.
	Usage transcript.Usage
	// Prompt is the size of the latest prompt: the pending request's
	// estimate, else the last reply's prompt_tokens.
	Prompt int
	// Waiting is set between a model request and its reply; RequestAt is
	// when it was sent.
	Waiting   bool
	RequestAt time.Time
	// Streaming is set once tokens of the pending reply arrive.
	Streaming    bool
	StreamTokens int
	TokensPerS   float64
	// StreamTail is the end of what the pending reply has written so far
	// (worker text, raw: render it through termsafe).
	StreamTail string
	// LastTool is the latest tool call ("bash: go test ./..."), with its
	// outcome once it has one.
	LastTool    string
	LastOutcome string
	// LastText is the latest assistant text's first line.
	LastText string
	Ended    bool
	Status   string
	// Entries are every event but model progress, in order.
	Entries []Entry
	// Version counts the entries applied (progress included): a drawing
	// of the state is stale when it changes.
	Version int
}

// Apply folds one entry into the state.
func (s *State) Apply(e Entry) {
	s.Version++
	switch e.Kind {
	case KindReset:
		*s = State{Version: s.Version}
		return
	case KindProgress:
		s.Streaming = true
		s.StreamTokens = e.Tokens
		s.TokensPerS = e.TokensPerS
		if e.Text != "" {
			s.StreamTail = e.Text
		}
		return
	case KindRunStart:
		if e.Start != nil {
			s.Start = *e.Start
			s.HasStart = true
		}
	case KindModelRequest:
		s.Turn = max(s.Turn, e.Turn)
		s.Waiting = true
		s.RequestAt = e.TS
		s.Streaming = false
		s.StreamTokens = 0
		s.TokensPerS = 0
		s.StreamTail = ""
		if e.EstPrompt > 0 {
			s.Prompt = e.EstPrompt
		}
	case KindAssistant:
		s.Waiting = false
		s.Streaming = false
		s.StreamTail = ""
		s.Usage.PromptTokens += e.Usage.PromptTokens
		s.Usage.CompletionTokens += e.Usage.CompletionTokens
		if e.Usage.PromptTokens > 0 {
			s.Prompt = e.Usage.PromptTokens
		}
		if t := FirstLine(e.Text); t != "" {
			s.LastText = t
		}
		if n := len(e.Calls); n > 0 {
			s.LastTool = Summary(e.Calls[n-1].Name, e.Calls[n-1].Args)
			s.LastOutcome = ""
		}
	case KindToolResult:
		s.LastTool = Summary(e.Tool, e.Args)
		s.LastOutcome = Outcome(e)
	case KindRunEnd:
		s.Ended = true
		s.Waiting = false
		s.Streaming = false
		s.StreamTail = ""
		s.Status = e.Status
		if e.Turn > 0 {
			s.Turn = e.Turn
		}
		if e.Usage.PromptTokens+e.Usage.CompletionTokens > 0 {
			s.Usage = e.Usage
		}
	}
	s.Entries = append(s.Entries, e)
	// Only the newest entries keep their whole text: four transcripts of
	// tens of thousands of events would otherwise hold their files in
	// memory. An older entry keeps a preview; the transcript view reads
	// the whole line back from the file when it is shown.
	if n := len(s.Entries); n > KeepWhole {
		s.Entries[n-1-KeepWhole].trim()
	}
}

// KeepWhole is how many of the newest entries keep their whole text.
const KeepWhole = 1000

// PreviewRunes is how much text a trimmed entry keeps.
const PreviewRunes = 160

// trim cuts the entry's texts down to previews.
func (e *Entry) trim() {
	if e.Trimmed {
		return
	}
	cut := func(s string) (string, bool) {
		if len(s) <= PreviewRunes {
			return s, false
		}
		n := 0
		for i := range s {
			if n == PreviewRunes {
				return strings.Clone(s[:i]), true
			}
			n++
		}
		return s, false
	}
	var c1, c2 bool
	e.Text, c1 = cut(e.Text)
	e.Args, c2 = cut(e.Args)
	trimmed := c1 || c2
	if len(e.Calls) > 0 {
		calls := make([]Call, len(e.Calls))
		for i, c := range e.Calls {
			var ci bool
			calls[i].Name = c.Name
			calls[i].Args, ci = cut(c.Args)
			trimmed = trimmed || ci
		}
		e.Calls = calls
	}
	e.Trimmed = trimmed
}

// ContextFill is the latest prompt as a fraction of the context window,
// or -1 when either is unknown.
func (s *State) ContextFill() float64 {
	if s.Start.ContextWindow <= 0 || s.Prompt <= 0 {
		return -1
	}
	return float64(s.Prompt) / float64(s.Start.ContextWindow)
}
