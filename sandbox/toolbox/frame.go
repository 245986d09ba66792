package toolbox

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A frame on the wire is a 4-byte big-endian length n, then n bytes: the
// 8-byte big-endian id of the request it is or answers, a 32-byte
// HMAC-SHA256 tag, and the JSON body. The tag is over the frame's
// direction, its id and its body, keyed with the run's secret (see
// sealFrame), so a frame is accepted only from a peer that holds the key.
const (
	// frameHeader is the size of a frame's length prefix.
	frameHeader = 4
	// idSize and tagSize are the id and tag that open every frame's
	// payload.
	idSize  = 8
	tagSize = sha256.Size
	// framePrefix is what precedes the body: length, id and tag.
	framePrefix = frameHeader + idSize + tagSize
	// keySize is the size of the secret the client hands the server in
	// its hello.
	keySize = 32
)

// Directions a frame's tag binds it to, so a request can never pass for
// a reply or a reply for a request.
const (
	dirRequest byte = 'Q'
	dirReply   byte = 'R'
)

// errFrameTooLarge is a frame whose length prefix passes the reader's cap.
var errFrameTooLarge = errors.New("frame too large")

// errBadTag is a frame whose tag does not match: it was not written by
// the peer holding the key, or not for this id and direction.
var errBadTag = errors.New("frame fails authentication")

// frameTag is the HMAC-SHA256 tag of a frame going in direction dir with
// id and body, under key.
func frameTag(key []byte, dir byte, id uint64, body []byte) [tagSize]byte {
	m := hmac.New(sha256.New, key)
	var head [1 + idSize]byte
	head[0] = dir
	binary.BigEndian.PutUint64(head[1:], id)
	m.Write(head[:])
	m.Write(body)
	var tag [tagSize]byte
	m.Sum(tag[:0])
	return tag
}

// sealFrame marshals v into one frame for id going in direction dir,
// tagged under key, length prefix included, so it goes out in a single
// Write.
func sealFrame(key []byte, dir byte, id uint64, v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(make([]byte, framePrefix))
	enc := json.NewEncoder(&buf)
	// Only the peer reads these; escaping <, > and & would cost bytes.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode frame: %w", err)
	}
	frame := buf.Bytes()
	// Encode's trailing newline is not part of the frame.
	frame = frame[:len(frame)-1]
	n := len(frame) - frameHeader
	if uint64(n) > uint64(^uint32(0)) {
		return nil, fmt.Errorf("encode frame: %d bytes: %w", n, errFrameTooLarge)
	}
	binary.BigEndian.PutUint32(frame, uint32(n))
	binary.BigEndian.PutUint64(frame[frameHeader:], id)
	tag := frameTag(key, dir, id, frame[framePrefix:])
	copy(frame[frameHeader+idSize:], tag[:])
	return frame, nil
}

// bodySize is the size of a sealed frame's JSON body.
func bodySize(frame []byte) int { return len(frame) - framePrefix }

// wireFrame is one frame's payload as read, not yet authenticated.
type wireFrame struct {
	id   uint64
	tag  [tagSize]byte
	body []byte
}

// open authenticates f as going in direction dir under key.
func (f wireFrame) open(key []byte, dir byte) error {
	want := frameTag(key, dir, f.id, f.body)
	if !hmac.Equal(want[:], f.tag[:]) {
		return fmt.Errorf("%w (id %d)", errBadTag, f.id)
	}
	return nil
}

// splitPayload splits a frame's payload into id, tag and body.
func splitPayload(p []byte) (wireFrame, error) {
	if len(p) < idSize+tagSize {
		return wireFrame{}, fmt.Errorf("frame of %d bytes is shorter than its id and tag", len(p))
	}
	f := wireFrame{id: binary.BigEndian.Uint64(p), body: p[idSize+tagSize:]}
	copy(f.tag[:], p[idSize:])
	return f, nil
}

// readHeader reads a frame's length prefix. A stream that ends before the
// first byte gives io.EOF; one that ends inside the prefix,
// io.ErrUnexpectedEOF.
func readHeader(r io.Reader) (uint32, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(h[:]), nil
}

// readBody reads a frame's n-byte payload. The buffer grows with what
// arrives, so a length prefix that promises more than comes costs no more
// memory than what came.
func readBody(r io.Reader, n uint32) ([]byte, error) {
	const direct = 64 << 10
	if n <= direct {
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, noEOF(err)
		}
		return body, nil
	}
	var buf bytes.Buffer
	got, err := buf.ReadFrom(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, err
	}
	if got < int64(n) {
		return nil, io.ErrUnexpectedEOF
	}
	return buf.Bytes(), nil
}

// readFrame reads one frame whose body is at most maxBody bytes, refusing
// a larger one before reading, let alone allocating, it. The frame is not
// yet authenticated.
func readFrame(r io.Reader, maxBody uint32) (wireFrame, error) {
	n, err := readHeader(r)
	if err != nil {
		return wireFrame{}, err
	}
	if n > maxBody+idSize+tagSize {
		return wireFrame{}, fmt.Errorf("%w: %d bytes, over the %d-byte limit", errFrameTooLarge, n, maxBody+idSize+tagSize)
	}
	p, err := readBody(r, n)
	if err != nil {
		return wireFrame{}, err
	}
	return splitPayload(p)
}

// noEOF turns an end of stream inside a frame into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decodeStrict decodes data, which must hold exactly one JSON value, into
// v, refusing fields v does not have.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
