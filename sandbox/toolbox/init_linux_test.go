package toolbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestServerReapsOrphansDuringACommand proves the server, as its
// namespace's init would, reaps the orphans a command leaves as soon as
// they exit, while the command still runs: none is left a zombie holding
// a slot of the pids limit.
func TestServerReapsOrphansDuringACommand(t *testing.T) {
	c, cmd := startProcess(t, []string{"-root", t.TempDir()})
	server := cmd.Process.Pid
	// Twenty double forks: each grandchild is orphaned, reparented to the
	// server (a subreaper), and exits at once. The command then counts,
	// after a pause, the zombies whose parent is the server.
	script := `for i in $(seq 20); do ( true & ) ; done; sleep 2.5
n=0; for f in /proc/[0-9]*/stat; do
  s=$(cat "$f" 2>/dev/null) || continue; s=${s##*) }; set -- $s
  [ "$1" = Z ] && [ "$2" = ` + strconv.Itoa(server) + ` ] && n=$((n+1))
done; echo "zombies $n"`
	res := mustBash(t, c, script)
	if strings.TrimSpace(res.Output) != "zombies 0" {
		t.Fatalf("output %q, want no zombie of the server's", res.Output)
	}
}

// TestServerForwardsSIGTERMToTheCommand proves a SIGTERM to the server
// reaches the running command, which may end on its own, and that the
// server then stops.
func TestServerForwardsSIGTERMToTheCommand(t *testing.T) {
	dir := t.TempDir()
	c, cmd := connectProcess(t, []string{"-root", dir})
	greet(t, c)
	go func() {
		// The reply never comes: the server stops.
		_, _ = c.Bash(t.Context(), `trap 'echo termed > termed; exit 0' TERM; touch started; sleep 30 & wait`, 60*time.Second)
	}()
	waitFile(t, filepath.Join(dir, "started"))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "termed"))
	deadline := time.Now().Add(10 * time.Second)
	for cmd.ProcessState == nil && time.Now().Before(deadline) {
		if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
			break
		}
		if zombie(cmd.Process.Pid) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if time.Now().After(deadline) {
		t.Fatal("the server did not stop within 10 s of SIGTERM")
	}
}

// zombie reports whether pid has exited and waits to be reaped.
func zombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(s[i+1:], " Z")
}
