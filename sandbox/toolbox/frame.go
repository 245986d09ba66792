package toolbox

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// frameHeader is the size of a frame's length prefix.
const frameHeader = 4

// errFrameTooLarge is a frame whose length prefix passes the reader's cap.
var errFrameTooLarge = errors.New("frame too large")

// encodeFrame marshals v into one frame, length prefix included, so it
// goes out in a single Write.
func encodeFrame(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(make([]byte, frameHeader))
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
	return frame, nil
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

// readBody reads a frame's n-byte body. The buffer grows with what
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

// readFrame reads one frame of at most maxBody bytes, refusing a larger
// one before reading, let alone allocating, its body.
func readFrame(r io.Reader, maxBody uint32) ([]byte, error) {
	n, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	if n > maxBody {
		return nil, fmt.Errorf("%w: %d bytes, over the %d-byte limit", errFrameTooLarge, n, maxBody)
	}
	return readBody(r, n)
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
