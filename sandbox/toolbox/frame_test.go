package toolbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestFrameTagBindsKeyDirectionIDAndBody proves a sealed frame opens
// under its own key, direction and id only, and that changing any bit of
// its id, tag or body makes it fail.
func TestFrameTagBindsKeyDirectionIDAndBody(t *testing.T) {
	key := newKey()
	frame, err := sealFrame(key, dirReply, 42, reply{ID: 42, Result: []byte(`{"text":"aGk="}`)})
	if err != nil {
		t.Fatal(err)
	}
	read := func(b []byte) wireFrame {
		t.Helper()
		f, err := readFrame(bytes.NewReader(b), maxReplyFrame)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := read(frame)
	if err := f.open(key, dirReply); err != nil || f.id != 42 || !strings.Contains(string(f.body), `"id":42`) {
		t.Fatalf("open: %v, id %d, body %q", err, f.id, f.body)
	}
	if err := f.open(newKey(), dirReply); !errors.Is(err, errBadTag) {
		t.Errorf("another key: %v, want errBadTag", err)
	}
	if err := f.open(key, dirRequest); !errors.Is(err, errBadTag) {
		t.Errorf("the other direction: %v, want errBadTag", err)
	}
	for i := frameHeader; i < len(frame); i++ {
		for bit := range 8 {
			flipped := bytes.Clone(frame)
			flipped[i] ^= 1 << bit
			if err := read(flipped).open(key, dirReply); !errors.Is(err, errBadTag) {
				t.Fatalf("byte %d bit %d flipped: %v, want errBadTag", i, bit, err)
			}
		}
	}
	// Two keys never give the same tag for the same frame (the key is
	// random per server), and one key always gives the same.
	first, again := frameTag(key, dirReply, 1, []byte("x")), frameTag(key, dirReply, 1, []byte("x"))
	if first != again || first == frameTag(newKey(), dirReply, 1, []byte("x")) {
		t.Error("tags are not a function of the key")
	}
	if bytes.Equal(newKey(), newKey()) || len(newKey()) != keySize {
		t.Error("keys are not fresh 32-byte secrets")
	}
}

// TestClientRefusesReplayedReply proves a genuine reply sent again (a
// replay) breaks the client instead of answering a later call: ids are
// never reused, and the tag binds the id.
func TestClientRefusesReplayedReply(t *testing.T) {
	var last []byte
	c := fakeServer(t, func(req request, key []byte, w io.Writer) {
		if last != nil {
			_, _ = w.Write(last) // the replay, before the genuine reply
		}
		last = taggedFrame(key, dirReply, req.ID, `{"id":`+jsonID(req.ID)+`,"result":{"text":"`+b64(fmt.Sprint("reply ", req.ID))+`"}}`)
		_, _ = w.Write(last)
	})
	if out, err := c.ReadFile(t.Context(), "a", 0, 1); err != nil || out != "reply 1" {
		t.Fatalf("first call: %q, %v", out, err)
	}
	if out, err := c.ReadFile(t.Context(), "a", 0, 1); !errors.Is(err, ErrServerGone) {
		t.Fatalf("call after a replay: %q, %v, want ErrServerGone", out, err)
	}
}

// TestFrameLengthCoversIDAndTag proves the length prefix counts the id
// and tag, so a frame too short to hold them is refused.
func TestFrameLengthCoversIDAndTag(t *testing.T) {
	frame := binary.BigEndian.AppendUint32(nil, idSize+tagSize-1)
	frame = append(frame, make([]byte, idSize+tagSize-1)...)
	if _, err := readFrame(bytes.NewReader(frame), maxReplyFrame); err == nil {
		t.Error("a frame without room for its id and tag was read")
	}
}

// BenchmarkFrameTag measures what authentication adds to a frame: the tag
// of a small reply (a read_file) and of the largest command output.
func BenchmarkFrameTag(b *testing.B) {
	key := newKey()
	for _, size := range []int{512, 64 << 10, 3 << 20} {
		body := bytes.Repeat([]byte("x"), size)
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				_ = frameTag(key, dirReply, 7, body)
			}
		})
	}
}
