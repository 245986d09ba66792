package jail

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// TestPipes: the program's stdin, stdout and stderr are the host's pipes,
// kept apart, and stdin's end of file reaches it.
func TestPipes(t *testing.T) {
	j, err := Start(t.Context(), script(`while read -r line; do echo "out:$line"; echo "err:$line" >&2; done; echo eof`))
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(j.Stdout)
	errs := bufio.NewReader(j.Stderr)
	for _, msg := range []string{"one", "two"} {
		if _, err := io.WriteString(j.Stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
		if got, _ := out.ReadString('\n'); got != "out:"+msg+"\n" {
			t.Errorf("stdout %q", got)
		}
		if got, _ := errs.ReadString('\n'); got != "err:"+msg+"\n" {
			t.Errorf("stderr %q", got)
		}
	}
	if err := j.Stdin.Close(); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	if strings.TrimSpace(string(rest)) != "eof" {
		t.Errorf("after end of file: %q", rest)
	}
	if err := j.Wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
}
