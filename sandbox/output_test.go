package sandbox

import (
	"bytes"
	"os"
	"testing"
	"time"
)

func TestDrainCapsAndKeepsReading(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	d := StartDrain(r, 10)
	go func() {
		_, _ = w.Write(bytes.Repeat([]byte("x"), 1<<20)) // far past the cap: must not block
		_ = w.Close()
	}()
	out := d.Wait(5 * time.Second)
	if len(out.Data) != 10 || !out.Capped {
		t.Fatalf("kept %d bytes, capped %v", len(out.Data), out.Capped)
	}
}

func TestDrainGivesUpOnAHeldPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Close() }()
	if _, err := w.Write([]byte("before")); err != nil {
		t.Fatal(err)
	}
	d := StartDrain(r, 100)
	start := time.Now()
	out := d.Wait(200 * time.Millisecond) // w stays open, as a stray process would hold it
	if string(out.Data) != "before" || time.Since(start) > 5*time.Second {
		t.Fatalf("got %q after %v", out.Data, time.Since(start))
	}
}

func TestDecodeOutput(t *testing.T) {
	if got := DecodeOutput([]byte("ok \xff\xfe é")); got != "ok \uFFFD\uFFFD é" {
		t.Fatalf("got %q", got)
	}
}
