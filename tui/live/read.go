package live

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/dirtywork/dirtywork/transcript"
)

// ReadEntry reads line number line (1-based) of the transcript at path
// whole: the entry a trimmed preview stands for.
func ReadEntry(path string, line int) (Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return Entry{}, err
	}
	defer func() { _ = f.Close() }() // read only
	r := bufio.NewReaderSize(f, 256<<10)
	for n := 1; ; n++ {
		data, err := r.ReadBytes('\n')
		if n == line {
			if len(data) == 0 || data[len(data)-1] != '\n' {
				return Entry{}, fmt.Errorf("%s: line %d is not complete", path, line)
			}
			lines, problems, rerr := transcript.Read(bytes.NewReader(data))
			if rerr != nil {
				return Entry{}, rerr
			}
			if len(lines) != 1 {
				if len(problems) > 0 {
					return Entry{}, problems[0]
				}
				return Entry{}, fmt.Errorf("%s: line %d holds no event", path, line)
			}
			l := lines[0]
			l.Number = line
			return FromLine(l), nil
		}
		if err == io.EOF {
			return Entry{}, fmt.Errorf("%s has fewer than %d lines", path, line)
		}
		if err != nil {
			return Entry{}, err
		}
	}
}
