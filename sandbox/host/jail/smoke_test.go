package jail

import (
	"io"
	"testing"
)

func TestSmoke(t *testing.T) {
	j, err := Start(t.Context(), Config{Path: "/bin/bash", Args: []string{"bash", "-c", "echo hi; id; grep Cap /proc/self/status; hostname; ls -la /; ls /dev; cat /proc/self/mountinfo; echo $$; ip addr"}})
	if err != nil {
		t.Fatal(err)
	}
	_ = j.Stdin.Close()
	go func() { b, _ := io.ReadAll(j.Stderr); t.Logf("stderr: %s", b) }()
	out, _ := io.ReadAll(j.Stdout)
	t.Logf("%s", out)
	t.Logf("wait: %v", j.Wait())
	t.Logf("%+v", j.Info())
}
