package toolbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// replyKinds are the request kinds a reply can answer.
var replyKinds = []string{
	kindHello, kindReadFile, kindWriteFile, kindEditFile, kindInsertText, kindApplyEdits,
	kindListDir, kindGrep, kindBash, kindMeasure, kindShutdown,
}

// fuzzKey is the key the fuzz seeds are tagged with.
var fuzzKey = bytes.Repeat([]byte{7}, keySize)

// FuzzDecodeReply feeds arbitrary streams to the client's frame reader and
// reply decoder: they must never panic, and whatever they accept must
// hold the invariants the client relies on.
func FuzzDecodeReply(f *testing.F) {
	for _, seed := range []string{
		`{"id":1,"result":{"text":"aGk="}}`,
		`{"id":1,"result":{"text":""}}`,
		`{"id":2,"result":{"exit_code":0,"output":"aGkK","capped":false,"timed_out":false,"launch_error":""}}`,
		`{"id":2,"result":{"exit_code":-1,"output":"","capped":false,"timed_out":true,"launch_error":""}}`,
		`{"id":3,"result":{"bytes":4096,"entries":3,"escaping_symlinks":["bA=="],"escaping_truncated":false,"violation":""}}`,
		`{"id":4,"result":{"version":1,"pid":7,"uid":1000,"gid":1000,"root":"L3dvcms=","dumpable":false}}`,
		`{"id":5,"result":{}}`,
		`{"id":6,"error":{"kind":"busy","message":"m"}}`,
		`{"id":6,"error":{"kind":"canceled","message":""}}`,
		`{"id":0,"error":{"kind":"bad_request","message":"m"}}`,
		`{"id":1,"result":{"text":""},"error":{"kind":"busy","message":""}}`,
		`[]`, `null`, `{"id":1e400}`,
	} {
		var probe struct{ ID uint64 }
		_ = json.Unmarshal([]byte(seed), &probe) // 0 for the seeds without one
		for k := range replyKinds {
			f.Add(taggedFrame(fuzzKey, dirReply, probe.ID, seed), uint8(k))
		}
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, k uint8) {
		kind := replyKinds[int(k)%len(replyKinds)]
		r := bytes.NewReader(stream)
		for {
			fr, err := readFrame(r, maxReplyFrame)
			if err != nil {
				return
			}
			if len(fr.body) > len(stream) {
				t.Fatalf("a %d-byte body from a %d-byte stream", len(fr.body), len(stream))
			}
			// The client drops a frame that fails its tag before decoding
			// it; the decoder is fuzzed behind the tag all the same.
			_ = fr.open(fuzzKey, dirReply)
			d, err := decodeReply(fr.id, fr.body, func(uint64) (string, bool) { return kind, true })
			if err != nil {
				continue
			}
			checkDecoded(t, d, kind)
		}
	})
}

// checkDecoded asserts what an accepted reply guarantees.
func checkDecoded(t *testing.T, d decoded, kind string) {
	t.Helper()
	if d.id == 0 || d.kind != kind {
		t.Fatalf("accepted reply id %d kind %q for %q", d.id, d.kind, kind)
	}
	if d.remote != nil && (d.canceled || !errors.Is(d.remote, kindSentinel(d.remote.Kind)) || kindSentinel(d.remote.Kind) == nil) {
		t.Fatalf("accepted error reply %+v", d.remote)
	}
	if d.remote != nil || d.canceled || kind != kindBash {
		return
	}
	b := d.bash
	if b.ExitCode < -1 || b.ExitCode > 255 || len(b.Output) > 3*maxOutput || !utf8.Valid(b.Output) {
		t.Fatalf("accepted bash result %+v", b)
	}
	if b.TimedOut && (len(b.Output) > 0 || b.ExitCode != -1) {
		t.Fatalf("accepted a timed-out result with output or status: %+v", b)
	}
}
