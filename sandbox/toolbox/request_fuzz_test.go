package toolbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// newRequestArgs is a fresh value of the arguments type a kind's request
// decodes into, nil for a kind without one.
func newRequestArgs(kind string) any {
	switch kind {
	case kindHello:
		return new(helloArgs)
	case kindReadFile:
		return new(readFileArgs)
	case kindWriteFile:
		return new(writeFileArgs)
	case kindEditFile:
		return new(editFileArgs)
	case kindInsertText:
		return new(insertTextArgs)
	case kindApplyEdits:
		return new(applyEditsArgs)
	case kindListDir:
		return new(listDirArgs)
	case kindGrep:
		return new(grepArgs)
	case kindBash:
		return new(bashArgs)
	case kindMeasure:
		return new(measureArgs)
	case kindBudget:
		return new(budgetArgs)
	case kindSweep:
		return new(sweepArgs)
	case kindMark:
		return new(markArgs)
	case kindSeal:
		return new(sealArgs)
	case kindVerify:
		return new(verifyArgs)
	}
	return nil
}

// requestSeeds are request bodies as the client sends them and as the
// server tests send them (server_test.go), each with its id.
var requestSeeds = []struct {
	id   uint64
	body string
}{
	{2, `{"id":2,"kind":"read_file","args":{"path":"YS50eHQ=","offset":0,"limit":400}}`},
	{3, `{"id":3,"kind":"write_file","args":{"path":"YS50eHQ=","content":"aGVsbG8K"}}`},
	{4, `{"id":4,"kind":"edit_file","args":{"path":"YS50eHQ=","old":"aGVsbG8=","new":"aGk="}}`},
	{5, `{"id":5,"kind":"insert_text","args":{"path":"YS50eHQ=","anchor":"aGk=","text":"eA==","after":true}}`},
	{6, `{"id":6,"kind":"apply_edits","args":{"path":"YS50eHQ=","edits":[{"old":"YQ==","new":"Yg=="},{"old":"Yw==","new":"ZA=="}]}}`},
	{7, `{"id":7,"kind":"list_dir","args":{"path":"Lg=="}}`},
	{8, `{"id":8,"kind":"grep","args":{"pattern":"VE9ETw==","path":"Lg==","glob":"Ki5nbw==","timeout_ms":30000}}`},
	{9, `{"id":9,"kind":"bash","args":{"command":"Z28gdGVzdCAuLy4uLg==","timeout_ms":120000}}`},
	{10, `{"id":10,"kind":"measure","args":{"max_bytes":1048576,"max_entries":1000}}`},
	{11, `{"id":11,"kind":"budget","args":{}}`},
	{12, `{"id":12,"kind":"sweep","args":{"rewalk":true}}`},
	{13, `{"id":13,"kind":"mark","args":{}}`},
	{14, `{"id":14,"kind":"seal","args":{"since_ns":1754472400000000000,"tracked":"MTAwNjQ0IGEudHh0ADEwMDc1NSBydW4uc2gA","exclude":null,"keep_root_git":false,"drop_long_paths":true,"drop":false}}`},
	{15, `{"id":15,"kind":"verify","args":{"command":"bWFrZSB0ZXN0","timeout_ms":60000,"setup":"Z2l0IGluaXQgLXE=","dir":"L3RtcC92ZXJpZnk=","wipe":["L3RtcA=="],"env":["SE9NRT0vdG1wL3ZlcmlmeS9ob21l"]}}`},
	{16, `{"id":16,"kind":"cancel"}`},
	{17, `{"id":17,"kind":"shutdown"}`},
	// The refusals of TestServeRefusesBadRequests.
	{0, "hello?"},
	{1, `{"id":1,"kind":"list_dir","args":{"path":"Lg=="},"admin":true}`},
	{2, `{"id":2,"kind":"read_file","args":{"path":"YQ==","offset":0,"limit":1,"follow":true}}`},
	{3, `{"id":3,"kind":"exec","args":{}}`},
	{4, `{"id":4,"kind":"read_file"}`},
	{5, `{"id":5,"kind":"list_dir","args":{"path":"Lg=="}}{}`},
	{0, `{"id":0,"kind":"list_dir","args":{"path":"Lg=="}}`},
	{6, `{"id":6,"kind":"read_file","args":{"path":"YQ==","offset":"0","limit":1}}`},
	{7, `{"id":7,"kind":"list_dir","args":{"path":"%%"}}`},
	{8, `{"id":8,"kind":"bash","args":{"command":"dHJ1ZQ==","timeout_ms":0}}`},
	{9, `{"id":9,"kind":"measure","args":{"max_bytes":-1,"max_entries":0}}`},
	{10, `{"id":10,"kind":"hello","args":{"version":1}}`},
	{11, `{"id":11,"kind":"shutdown","args":{"now":true}}`},
	{12, `{"id":12,"kind":"seal","args":{"tracked":"MTAwNjQ0IGEudHh0"}}`},
	{13, `{"id":13,"kind":"verify","args":{"command":"dHJ1ZQ==","timeout_ms":1000,"dir":"cmVsYXRpdmU="}}`},
}

// fuzzHello is the hello a client sends first, with fuzzKey, as id 1.
func fuzzHello() string {
	data, _ := json.Marshal(request{ID: 1, Kind: kindHello, Args: mustJSON(helloArgs{
		Version: ProtocolVersion, Key: fuzzKey, MaxBytes: 1 << 30, MaxEntries: 100000,
	})})
	return string(data)
}

func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}

// readAllRequests runs the server's frame reader over stream and returns
// what it delivered, the error that ended it last.
func readAllRequests(stream []byte) []inbound {
	frames := make(chan inbound)
	quit := make(chan struct{})
	defer close(quit)
	go readRequests(bytes.NewReader(stream), frames, quit)
	var got []inbound
	for f := range frames {
		got = append(got, f)
		if f.err != nil {
			return got
		}
	}
	return got
}

// FuzzReadRequests feeds arbitrary streams to the tool server's request
// side: its frame reader, the hello's authentication, the envelope and
// every kind's argument decoding. None may panic. The reader is lossless
// (every frame it delivers re-encodes to the exact bytes it was read
// from) and ends with io.EOF only at a frame boundary; the first frame
// authenticates only as a well-formed hello tagged with the key it
// carries, later ones only under that key; and every request prepare
// accepts survives the client's encoding: sealed again, it reads back,
// authenticates and is accepted again with the same arguments.
func FuzzReadRequests(f *testing.F) {
	hello := taggedFrame(fuzzKey, dirRequest, 1, fuzzHello())
	f.Add(hello, false)
	f.Add(append(bytes.Clone(hello), hello...), false) // a replayed hello
	for _, s := range requestSeeds {
		frame := taggedFrame(fuzzKey, dirRequest, s.id, s.body)
		f.Add(append(bytes.Clone(hello), frame...), false)
		f.Add(append(bytes.Clone(hello), frame...), true)
	}
	// A reply where a request belongs, a request under another key, a
	// frame too short for its id and tag, an oversized frame, a cut one.
	f.Add(taggedFrame(fuzzKey, dirReply, 1, fuzzHello()), false)
	f.Add(append(bytes.Clone(hello), taggedFrame(bytes.Repeat([]byte{9}, keySize), dirRequest, 7, requestSeeds[5].body)...), false)
	f.Add(binary.BigEndian.AppendUint32(nil, idSize+tagSize-1), false)
	f.Add(binary.BigEndian.AppendUint32(nil, maxRequestFrame+idSize+tagSize+1), false)
	f.Add(hello[:len(hello)-3], false)
	f.Fuzz(func(t *testing.T, stream []byte, measureOnly bool) {
		got := readAllRequests(stream)
		if len(got) == 0 || got[len(got)-1].err == nil {
			t.Fatalf("the reader stopped without an error after %d frames", len(got))
		}
		s := &server{cfg: ServerConfig{MeasureOnly: measureOnly}, seen: map[uint64]bool{}}
		authentic := true // no frame failed authentication yet: serving goes on
		consumed := 0
		for i, in := range got {
			switch {
			case in.err != nil:
				if i != len(got)-1 {
					t.Fatalf("frame %d: error %v before the last", i, in.err)
				}
				if errors.Is(in.err, io.EOF) != (consumed == len(stream)) {
					t.Fatalf("ended with %v after %d of %d bytes", in.err, consumed, len(stream))
				}
				continue
			case in.tooLarge > 0:
				if in.tooLarge <= maxRequestFrame+idSize+tagSize {
					t.Fatalf("frame %d of %d bytes skipped as too large", i, in.tooLarge)
				}
				consumed += frameHeader + int(in.tooLarge)
				if consumed > len(stream) {
					t.Fatalf("skipped past the stream's end: %d of %d bytes", consumed, len(stream))
				}
				continue
			}
			fr := in.frame
			n := idSize + tagSize + len(fr.body)
			if consumed+frameHeader+n > len(stream) {
				t.Fatalf("frame %d: a %d-byte body from a %d-byte stream", i, len(fr.body), len(stream))
			}
			again := binary.BigEndian.AppendUint32(nil, uint32(n))
			again = binary.BigEndian.AppendUint64(again, fr.id)
			again = append(append(again, fr.tag[:]...), fr.body...)
			if !bytes.Equal(again, stream[consumed:consumed+frameHeader+n]) {
				t.Fatalf("frame %d does not re-encode to the bytes it was read from", i)
			}
			consumed += frameHeader + n
			if authentic {
				checkAuthentication(t, s, fr)
				authentic = s.key != nil && fr.open(s.key, dirRequest) == nil
			}
			// Decoding is fuzzed behind the tag all the same.
			checkPrepare(t, s, fr.id, fr.body)
		}
	})
}

// FuzzPrepareRequest is FuzzReadRequests with the framing done right: the
// fuzzed body is the first frame's and a later one's, tagged with the key
// it claims to be under, so the mutations reach the hello's
// authentication, the envelope and the argument decoders instead of
// breaking the length prefix.
func FuzzPrepareRequest(f *testing.F) {
	f.Add([]byte(fuzzHello()), false)
	for _, s := range requestSeeds {
		f.Add([]byte(s.body), false)
		f.Add([]byte(s.body), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, measureOnly bool) {
		var probe struct{ ID uint64 }
		_ = json.Unmarshal(body, &probe)
		fr := wireFrame{id: probe.ID, tag: frameTag(fuzzKey, dirRequest, probe.ID, body), body: body}
		// As the first frame: only a hello carrying fuzzKey authenticates.
		first := &server{cfg: ServerConfig{MeasureOnly: measureOnly}, seen: map[uint64]bool{}}
		checkAuthentication(t, first, fr)
		// As a later frame of a client holding fuzzKey.
		s := &server{cfg: ServerConfig{MeasureOnly: measureOnly}, seen: map[uint64]bool{}, key: fuzzKey}
		checkAuthentication(t, s, fr)
		checkPrepare(t, s, fr.id, fr.body)
	})
}

// checkAuthentication runs the server's authentication of a frame and
// checks its verdict against the tag.
func checkAuthentication(t *testing.T, s *server, fr wireFrame) {
	t.Helper()
	keyed := s.key != nil
	err := s.authenticate(fr)
	if keyed {
		if (err == nil) != (fr.open(s.key, dirRequest) == nil) {
			t.Fatalf("authenticate says %v for a frame whose tag says otherwise", err)
		}
		return
	}
	if err != nil {
		if s.key != nil {
			t.Fatalf("a refused first frame (%v) set the key", err)
		}
		return
	}
	var req request
	var args helloArgs
	if decodeStrict(fr.body, &req) != nil || req.Kind != kindHello || req.ID != fr.id ||
		json.Unmarshal(req.Args, &args) != nil || !bytes.Equal(args.Key, s.key) || len(s.key) != keySize {
		t.Fatalf("authenticated a first frame that is no hello with the key %x: %q", s.key, fr.body)
	}
	if want := frameTag(s.key, dirRequest, fr.id, fr.body); want != fr.tag {
		t.Fatalf("authenticated a hello whose tag is not under its key")
	}
}

// checkPrepare decodes a request body as dispatch does and, when prepare
// accepts it, checks the request survives the client's encoding.
func checkPrepare(t *testing.T, s *server, frameID uint64, body []byte) {
	t.Helper()
	var req request
	if decodeStrict(body, &req) != nil || req.ID != frameID || req.ID == 0 {
		return
	}
	if _, err := s.prepare(req.Kind, req.Args); err != nil {
		return
	}
	if s.cfg.MeasureOnly && req.Kind != kindHello && req.Kind != kindMeasure {
		t.Fatalf("a measure-only server prepared %q", req.Kind)
	}
	args := newRequestArgs(req.Kind)
	if args == nil {
		t.Fatalf("prepared a request of kind %q, which takes no arguments", req.Kind)
	}
	if err := decodeStrict(req.Args, args); err != nil {
		t.Fatalf("prepared %s arguments that do not decode: %v", req.Kind, err)
	}
	key := s.key
	if key == nil {
		key = fuzzKey
	}
	// The client encodes its arguments struct into the frame.
	frame, err := sealFrame(key, dirRequest, req.ID, outRequest{ID: req.ID, Kind: req.Kind, Args: args})
	if err != nil {
		t.Fatalf("seal a prepared %s request: %v", req.Kind, err)
	}
	fr, err := readFrame(bytes.NewReader(frame), maxRequestFrame)
	if err != nil || fr.open(key, dirRequest) != nil || fr.id != req.ID {
		t.Fatalf("a sealed %s request reads back as %d, %v", req.Kind, fr.id, err)
	}
	var back request
	if err := decodeStrict(fr.body, &back); err != nil || back.ID != req.ID || back.Kind != req.Kind {
		t.Fatalf("a sealed %s request decodes as %+v, %v", req.Kind, back, err)
	}
	if _, err := s.prepare(back.Kind, back.Args); err != nil {
		t.Fatalf("a %s request prepared once is refused as the client encodes it: %v\n%s", req.Kind, err, back.Args)
	}
	twice := newRequestArgs(req.Kind)
	if err := decodeStrict(back.Args, twice); err != nil || !reflect.DeepEqual(twice, args) {
		t.Fatalf("%s arguments %+v read back as %+v (%v)", req.Kind, args, twice, err)
	}
}

// FuzzParseTracked feeds arbitrary bytes to the seal request's list of
// tracked paths: it must never panic, and a list it accepts is one
// TrackedList writes back to the same paths and modes.
func FuzzParseTracked(f *testing.F) {
	for _, s := range []string{
		"", "100644 a.txt\x00", "100644 a.txt\x00100755 run.sh\x00120000 link\x00160000 sub\x00",
		"100644 name with spaces\x00", "040000 dir/\x00", "100644 a.txt", "x a\x00", "100644 \x00",
		"37777777777 big\x00", "40000000000 over\x00", "100644 dup\x00100755 dup\x00",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseTracked(b)
		if err != nil {
			if m != nil {
				t.Fatalf("refused (%v) with paths %v", err, m)
			}
			return
		}
		if len(m) > bytes.Count(b, []byte{0}) {
			t.Fatalf("%d paths from %d entries", len(m), bytes.Count(b, []byte{0}))
		}
		for p := range m {
			if p == "" || bytes.IndexByte([]byte(p), 0) >= 0 {
				t.Fatalf("accepted path %q", p)
			}
		}
		back, err := parseTracked(TrackedList(m))
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Fatalf("tracked list %v reads back as %v (%v)", m, back, err)
		}
	})
}
