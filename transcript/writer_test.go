package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// testTime is a fixed clock reading: 2026-11-30T07:38:12.123456 UTC.
var testTime = time.Date(2026, 11, 30, 7, 38, 12, 123456789, time.UTC)

const testTS = "2026-11-30T07:38:12.123456+00:00"

func fixedClock() time.Time { return testTime }

// newTestWriter creates a transcript in a fresh directory with a fixed clock.
func newTestWriter(t *testing.T) (*Writer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), TranscriptName)
	w, err := Create(path, WithClock(fixedClock))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w, path
}

// writeAndRead writes events, closes the writer and returns the file's lines.
func writeAndRead(t *testing.T, events ...Event) []string {
	t.Helper()
	w, path := newTestWriter(t)
	for _, ev := range events {
		if err := w.Write(ev); err != nil {
			t.Fatalf("Write(%T): %v", ev, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fileLines(t, data)
}

// splitLines splits newline-terminated data into lines, failing on a
// missing final newline.
func fileLines(t *testing.T, data []byte) []string {
	t.Helper()
	if len(data) == 0 {
		return nil
	}
	if data[len(data)-1] != '\n' {
		t.Fatalf("file does not end with a newline: %q", data[max(0, len(data)-80):])
	}
	return strings.Split(string(data[:len(data)-1]), "\n")
}

// decodeObject parses one line as a JSON object, keeping numbers exact.
func lineObject(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("line is not a JSON object: %v\n%s", err, line)
	}
	return m
}

func TestCreateRefusesExistingPaths(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir, path string)
	}{
		{"existing file", func(t *testing.T, dir, path string) {
			putFile(t, path, "old content\n")
		}},
		{"empty existing file", func(t *testing.T, dir, path string) {
			putFile(t, path, "")
		}},
		{"symlink to a file", func(t *testing.T, dir, path string) {
			putFile(t, filepath.Join(dir, "target"), "target content\n")
			putSymlink(t, "target", path)
		}},
		{"dangling symlink", func(t *testing.T, dir, path string) {
			putSymlink(t, "nowhere", path)
		}},
		{"directory", func(t *testing.T, dir, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, TranscriptName)
			tc.setup(t, dir, path)
			before := dirSnapshot(t, dir)
			w, err := Create(path)
			if err == nil {
				_ = w.Close()
				t.Fatal("Create succeeded over an existing entry")
			}
			if !errors.Is(err, fs.ErrExist) {
				t.Errorf("error %v does not match fs.ErrExist", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the path", err)
			}
			if after := dirSnapshot(t, dir); after != before {
				t.Errorf("directory changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func TestCreateMissingDirectory(t *testing.T) {
	_, err := Create(filepath.Join(t.TempDir(), "no-such-dir", TranscriptName))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Create in a missing directory: got %v, want fs.ErrNotExist", err)
	}
}

func TestCreateMode0600(t *testing.T) {
	_, path := newTestWriter(t)
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want a regular file with -rw-------", info.Mode())
	}
}

func TestWriteReachesFileBeforeClose(t *testing.T) {
	w, path := newTestWriter(t)
	for i := 1; i <= 3; i++ {
		if err := w.Write(Nudge{Kind: NudgeStall, Turn: i}); err != nil {
			t.Fatal(err)
		}
		// Read through a separate descriptor while the writer stays open:
		// the line must already be in the file, complete.
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := fileLines(t, data)
		if len(lines) != i {
			t.Fatalf("after %d writes the file holds %d lines", i, len(lines))
		}
		want := fmt.Sprintf(`{"ts":"%s","event":"nudge","kind":"stall","turn":%d}`, testTS, i)
		if lines[i-1] != want {
			t.Fatalf("line %d = %s\nwant %s", i, lines[i-1], want)
		}
	}
}

func TestWriteNonFiniteFloatsAsNull(t *testing.T) {
	nan, inf, ninf := Float(math.NaN()), Float(math.Inf(1)), Float(math.Inf(-1))
	tests := []struct {
		name  string
		event Event
		// check looks up the value that held the non-finite float.
		path []string
	}{
		{"struct field NaN", RunEnd{Status: "completed", DurationS: nan}, []string{"duration_s"}},
		{"struct field +Inf", ModelProgress{Turn: 1, Tokens: 5, TokensPerS: inf}, []string{"tokens_per_s"}},
		{"pointer field -Inf", RunStart{Temperature: &ninf}, []string{"temperature"}},
		{"nested field +Inf", RunEnd{Setup: &Setup{Command: "make", DurationS: inf}}, []string{"setup", "duration_s"}},
		{"map value NaN", GuardrailBlock{Tool: "bash", Args: map[string]any{"timeout": math.NaN(), "command": "ls"}}, []string{"args", "timeout"}},
		{"nested map -Inf", GuardrailBlock{Tool: "bash", Args: map[string]any{"opts": map[string]any{"x": math.Inf(-1)}}}, []string{"args", "opts", "x"}},
		{"slice in map NaN", GuardrailBlock{Tool: "t", Args: map[string]any{"list": []any{1.5, math.NaN(), math.Inf(1)}}}, []string{"args", "list", "1"}},
		{"typed map +Inf", RunStart{Sandbox: map[string]float64{"cpus": math.Inf(1)}}, []string{"sandbox", "cpus"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines := writeAndRead(t, tc.event)
			if len(lines) != 1 {
				t.Fatalf("got %d lines, want 1", len(lines))
			}
			if !json.Valid([]byte(lines[0])) {
				t.Fatalf("line is not valid JSON: %s", lines[0])
			}
			var v any = lineObject(t, lines[0])
			for _, key := range tc.path {
				switch c := v.(type) {
				case map[string]any:
					var ok bool
					if v, ok = c[key]; !ok {
						t.Fatalf("key %q missing in %s", key, lines[0])
					}
				case []any:
					i, err := strconv.Atoi(key)
					if err != nil || i >= len(c) {
						t.Fatalf("bad index %q into %v", key, c)
					}
					v = c[i]
				default:
					t.Fatalf("cannot descend into %T at %q", v, key)
				}
			}
			if v != nil {
				t.Fatalf("value at %v = %v, want null\n%s", tc.path, v, lines[0])
			}
		})
	}
}

func TestWriteKeepsHTMLAndNonASCIIRaw(t *testing.T) {
	text := `<script>if (a < b && c > d) {}</script> é 日本 🎉 "q" \ tab	end`
	lines := writeAndRead(t, Assistant{Text: text})
	if !strings.Contains(lines[0], `<script>if (a < b && c > d) {}</script> é 日本 🎉 \"q\" \\ tab\tend`) {
		t.Fatalf("text not written raw: %s", lines[0])
	}
	for _, escaped := range []string{`\u003c`, `\u003e`, `\u0026`, `\u00e9`} {
		if strings.Contains(lines[0], escaped) {
			t.Errorf("line contains %s: %s", escaped, lines[0])
		}
	}
	if got := lineObject(t, lines[0])["text"]; got != text {
		t.Fatalf("text round trip = %q, want %q", got, text)
	}
}

func TestWriteStampsTSAndEventFirst(t *testing.T) {
	events := []Event{
		RunStart{Task: "t"},
		ModelRequest{Turn: 1, EstPromptTokens: 10},
		ModelProgress{Turn: 1, Tokens: 3, TokensPerS: 1.5},
		Assistant{Text: "hi"},
		ToolResult{Tool: "bash"},
		GuardrailBlock{Tool: "bash"},
		Nudge{Kind: NudgeEmpty, Turn: 2},
		SandboxReset{Reason: "oom"},
		Verify{Round: 1},
		RunEnd{Status: "completed"},
		RunEndFailure{Status: "model_error"},
		Unknown{Name: "future_event"},
		Unknown{Name: "future_event", Fields: map[string]json.RawMessage{"ts": json.RawMessage(`"x"`), "event": json.RawMessage(`"y"`), "n": json.RawMessage(`1`)}},
	}
	lines := writeAndRead(t, events...)
	if len(lines) != len(events) {
		t.Fatalf("got %d lines, want %d", len(lines), len(events))
	}
	for i, line := range lines {
		name := events[i].EventName()
		prefix := fmt.Sprintf(`{"ts":"%s","event":"%s"`, testTS, name)
		if !strings.HasPrefix(line, prefix) {
			t.Errorf("line %d does not start with %s:\n%s", i+1, prefix, line)
		}
		m := lineObject(t, line)
		if m["ts"] != testTS || m["event"] != name {
			t.Errorf("line %d: ts=%v event=%v", i+1, m["ts"], m["event"])
		}
		// A duplicate "ts" or "event" key would be silently resolved by
		// decoders; count the raw occurrences instead.
		if n := strings.Count(line, `"ts":`); n != 1 {
			t.Errorf("line %d has %d ts keys: %s", i+1, n, line)
		}
		if n := strings.Count(line, `"event":`); n != 1 {
			t.Errorf("line %d has %d event keys: %s", i+1, n, line)
		}
	}
}

func TestFormatTimestamp(t *testing.T) {
	plus5 := time.FixedZone("plus5", 5*3600)
	tests := []struct {
		in   time.Time
		want string
	}{
		{testTime, testTS},
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000000+00:00"},
		{time.Date(2026, 1, 2, 8, 4, 5, 7000, plus5), "2026-01-02T03:04:05.000007+00:00"},
	}
	for _, tc := range tests {
		got := FormatTimestamp(tc.in)
		if got != tc.want {
			t.Errorf("FormatTimestamp(%v) = %s, want %s", tc.in, got, tc.want)
		}
		back, err := time.Parse(time.RFC3339Nano, got)
		if err != nil || !back.Equal(tc.in.Truncate(time.Microsecond)) {
			t.Errorf("%s parses back as %v, %v", got, back, err)
		}
	}
}

func TestWriteConcurrentLinesDoNotInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), TranscriptName)
	w, err := Create(path) // real clock: ts order is checked below
	if err != nil {
		t.Fatal(err)
	}
	const writers, perWriter = 8, 200
	// Lines far larger than a pipe buffer or a typical write chunk make
	// any interleaving visible as broken JSON.
	pad := strings.Repeat("x", 16<<10)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for g := range writers {
		wg.Go(func() {
			for i := range perWriter {
				ev := ToolResult{Tool: fmt.Sprintf("g%d", g), Args: fmt.Sprint(i), Result: pad}
				if err := w.Write(ev); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	next := map[string]int{}
	var lastTS time.Time
	n := 0
	for sc.Scan() {
		n++
		var ev struct {
			TS     time.Time `json:"ts"`
			Tool   string    `json:"tool"`
			Args   string    `json:"args"`
			Result string    `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d is broken: %v", n, err)
		}
		if ev.Result != pad {
			t.Fatalf("line %d: result damaged", n)
		}
		if ev.Args != fmt.Sprint(next[ev.Tool]) {
			t.Fatalf("line %d: %s wrote %s, want %d (lost or reordered)", n, ev.Tool, ev.Args, next[ev.Tool])
		}
		next[ev.Tool]++
		if ev.TS.Before(lastTS) {
			t.Fatalf("line %d: ts %v goes back from %v", n, ev.TS, lastTS)
		}
		lastTS = ev.TS
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != writers*perWriter {
		t.Fatalf("got %d lines, want %d", n, writers*perWriter)
	}
}

func TestCloseIsIdempotentAndStopsWrites(t *testing.T) {
	w, path := newTestWriter(t)
	if err := w.Write(SandboxReset{Reason: "r"}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := w.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	err := w.Write(SandboxReset{Reason: "late"})
	if !errors.Is(err, ErrWriterClosed) {
		t.Fatalf("Write after Close: got %v, want ErrWriterClosed", err)
	}
	data, _ := os.ReadFile(path)
	if got := len(fileLines(t, data)); got != 1 {
		t.Fatalf("file has %d lines, want 1", got)
	}
}

// notAnObject is an event whose fields are not a JSON object.
type notAnObject []int

func (notAnObject) EventName() string { return "bogus" }

func TestWriteRejectsNonObjectEvent(t *testing.T) {
	w, path := newTestWriter(t)
	if err := w.Write(notAnObject{1, 2}); err == nil {
		t.Fatal("Write of a non-object event succeeded")
	}
	if err := w.Write(nil); err == nil {
		t.Fatal("Write(nil) succeeded")
	}
	if err := w.Write(Unknown{Name: "chan", Fields: nil}); err != nil {
		t.Fatalf("Write of a field-less event: %v", err)
	}
	data, _ := os.ReadFile(path)
	if want := `{"ts":"` + testTS + `","event":"chan"}` + "\n"; string(data) != want {
		t.Fatalf("file = %q, want only %q", data, want)
	}
}

func putFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func putSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// snapshotDir describes every entry of dir: name, type and content.
func dirSnapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fmt.Fprintf(&b, "%s:%v", e.Name(), e.Type())
		if e.Type().IsRegular() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, ":%q", data)
		}
		if e.Type()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, "->%s", target)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// TestWriterKeepsItsFirstError: on a device that is always full every
// write fails, and Err is the first one, naming its event.
func TestWriterKeepsItsFirstError(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("open /dev/full: %v", err)
	}
	w := &Writer{path: "/dev/full", now: time.Now, f: f}
	t.Cleanup(func() { _ = w.Close() })
	if w.Err() != nil {
		t.Fatalf("Err before any write: %v", w.Err())
	}
	first := w.Write(RunStart{Task: "t"})
	second := w.Write(Nudge{Kind: NudgeEmpty, Turn: 1})
	if first == nil || second == nil {
		t.Fatalf("writes to a full device succeeded: %v, %v", first, second)
	}
	if got := w.Err(); got == nil || got.Error() != first.Error() || !strings.Contains(got.Error(), "run_start") ||
		!errors.Is(got, syscall.ENOSPC) {
		t.Fatalf("Err = %v, want the first failure %v (ENOSPC)", got, first)
	}
}
