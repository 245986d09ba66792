package live

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/transcript"
)

func TestStateFoldsAndTrimsOldEntries(t *testing.T) {
	var s State
	s.Apply(Entry{Kind: KindRunStart, Start: &Start{MaxTurns: 40, ContextWindow: 1000}})
	s.Apply(Entry{Kind: KindModelRequest, Turn: 1, EstPrompt: 250})
	if !s.Waiting || s.ContextFill() != 0.25 {
		t.Fatalf("waiting %v fill %v", s.Waiting, s.ContextFill())
	}
	s.Apply(Entry{Kind: KindProgress, Tokens: 10, TokensPerS: 5})
	if !s.Streaming || len(s.Entries) != 2 {
		t.Fatalf("progress: streaming %v, %d entries (progress is not kept)", s.Streaming, len(s.Entries))
	}
	long := strings.Repeat("é", 5000)
	s.Apply(Entry{Kind: KindToolResult, Line: 4, Tool: "bash", Args: `{"command":"x"}`, Text: long})
	if s.LastTool != "bash: x" || s.LastOutcome != "ok" {
		t.Fatalf("last tool %q %q", s.LastTool, s.LastOutcome)
	}
	for range KeepWhole {
		s.Apply(Entry{Kind: KindNudge, Text: "stall"})
	}
	old := s.Entries[2]
	if !old.Trimmed || len([]rune(old.Text)) != PreviewRunes {
		t.Fatalf("old entry not trimmed: %v %d", old.Trimmed, len([]rune(old.Text)))
	}
	if s.Entries[len(s.Entries)-1].Trimmed {
		t.Fatal("a new entry was trimmed")
	}
	s.Apply(Entry{Kind: KindRunEnd, Status: "completed", Turn: 3})
	if !s.Ended || s.Waiting || s.Turn != 3 {
		t.Fatalf("end: %+v", s)
	}
	s.Apply(Entry{Kind: KindReset})
	if len(s.Entries) != 0 || s.Ended {
		t.Fatal("reset kept state")
	}
}

func TestReadEntryReadsALineWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "transcript.jsonl")
	w, err := transcript.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 3000)
	for _, ev := range []transcript.Event{
		transcript.RunStart{Task: "t"},
		transcript.ToolResult{Tool: "bash", Args: "{}", Result: long},
	} {
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := ReadEntry(path, 2)
	if err != nil || e.Kind != KindToolResult || e.Text != long || e.Line != 2 {
		t.Fatalf("entry %v %d %v", e.Kind, len(e.Text), err)
	}
	if _, err := ReadEntry(path, 9); err == nil {
		t.Fatal("read a line that is not there")
	}
}

// A streaming reply's tail is kept while it streams and dropped when the
// reply arrives, the next request goes out, or the run ends.
func TestStreamTailLastsWhileTheReplyStreams(t *testing.T) {
	var s State
	s.Apply(Entry{Kind: KindModelRequest, Turn: 1})
	s.Apply(Entry{Kind: KindProgress, Tokens: 10, Text: "Let me read"})
	s.Apply(Entry{Kind: KindProgress, Tokens: 12}) // a server that sends no tail keeps the last
	if !s.Streaming || s.StreamTail != "Let me read" {
		t.Fatalf("streaming %v, tail %q", s.Streaming, s.StreamTail)
	}
	s.Apply(Entry{Kind: KindAssistant, Text: "Let me read a.txt"})
	if s.StreamTail != "" {
		t.Fatalf("the reply arrived, the tail stayed: %q", s.StreamTail)
	}
	s.Apply(Entry{Kind: KindProgress, Text: "next"})
	s.Apply(Entry{Kind: KindModelRequest, Turn: 2})
	if s.StreamTail != "" {
		t.Fatalf("a new request kept the old tail: %q", s.StreamTail)
	}
	s.Apply(Entry{Kind: KindProgress, Text: "last"})
	s.Apply(Entry{Kind: KindRunEnd, Status: "interrupted"})
	if s.StreamTail != "" {
		t.Fatalf("the run ended, the tail stayed: %q", s.StreamTail)
	}
}
