package host

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/egress"
	"github.com/dirtywork/dirtywork/sandbox/egress/egresstest"
)

// TestAllowNetworkGoesThroughTheProxy runs a jail with --allow-network
// against a registry on a public-looking address of a network namespace
// of the test's own: the registry is reached through the proxy (plain
// http and CONNECT), while the host's loopback listener, docker's bridge
// gateway, cloud metadata and the host's own address are refused although
// the allowlist names them all, and a command that ignores the proxy
// variables reaches nothing.
func TestAllowNetworkGoesThroughTheProxy(t *testing.T) {
	requireJail(t)
	reg := egresstest.NewRegistry(t)
	loopPort := egresstest.ListenHost(t, "127.0.0.1:0", "host loopback service")
	anyPort := egresstest.ListenHost(t, "0.0.0.0:0", "host service on every address")
	r := newTestRepo(t)
	cfg := r.config()
	cfg.Network = true
	allow, err := egress.ParseRules(
		fmt.Sprintf("%s:%d", reg.Addr, reg.Port),
		fmt.Sprintf("127.0.0.1:%d", loopPort),
		fmt.Sprintf("172.17.0.1:%d", anyPort),
		fmt.Sprintf("%s:%d", reg.HostAddr, anyPort),
		"169.254.169.254:80",
	)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Allow = allow
	w := open(t, cfg)
	if info := w.Info(); info.Network != "proxy" || info.Egress == nil || len(info.Egress.Allowlist) != 5 {
		t.Fatalf("Info: network %q, egress %+v", info.Network, info.Egress)
	}

	curl := func(args string) (string, int) {
		t.Helper()
		res := bash(t, w, "curl -sS --max-time 10 "+args)
		return res.Output, res.ExitCode
	}
	if out, code := curl(reg.URL + "/pkg"); code != 0 || out != reg.Body {
		t.Fatalf("GET through the proxy: exit %d: %s", code, out)
	}
	if out, code := curl("--proxytunnel " + reg.URL + "/pkg"); code != 0 || out != reg.Body {
		t.Fatalf("CONNECT through the proxy: exit %d: %s", code, out)
	}
	for _, target := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/", loopPort),
		fmt.Sprintf("http://172.17.0.1:%d/", anyPort),
		fmt.Sprintf("http://%s:%d/", reg.HostAddr, anyPort),
		"http://169.254.169.254/latest/meta-data/",
	} {
		// Through the proxy, named explicitly (NO_PROXY sends loopback
		// to the jail's own): refused.
		out, code := curl("-o /dev/null -w '%{http_code}' -x http://" + egress.ListenAddr + " --noproxy '' " + target)
		if code != 0 || out != "403" {
			t.Errorf("%s through the proxy: exit %d, %s; want 403", target, code, out)
		}
		// Around it: nothing to connect to.
		if out, code := curl("--noproxy '*' " + target); code == 0 {
			t.Errorf("%s reached directly: %s", target, out)
		}
	}
	if out, code := curl("--noproxy '*' " + reg.URL); code == 0 {
		t.Errorf("the registry reached without the proxy: %s", out)
	}
	// The worker cannot make itself a way out through the socket's
	// directory.
	if res := bash(t, w, "touch /run/dirtywork/egress/x 2>&1; ls -l /run/dirtywork/egress"); !strings.Contains(res.Output, "Read-only") {
		t.Errorf("the socket's directory is writable: %s", res.Output)
	}

	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fin.Egress == nil || fin.Egress.Allowed != 2 || fin.Egress.Refused != 4 || len(fin.Egress.RefusedHosts) != 4 {
		t.Fatalf("summary %+v", fin.Egress)
	}
	f, err := os.Open(filepath.Join(r.runDir, egress.LogName))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var refused []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var d egress.Decision
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if d.Decision == egress.Refused {
			refused = append(refused, d.Host+": "+d.Reason)
		}
	}
	want := []string{"loopback", "private", "an address of the host", "link-local"}
	if len(refused) != len(want) {
		t.Fatalf("refusals %q", refused)
	}
	for i, reason := range want {
		if !strings.Contains(refused[i], reason) {
			t.Errorf("refusal %d is %q, want %q", i, refused[i], reason)
		}
	}
}

// TestNoNetworkHasNoProxy: without --allow-network nothing listens and the
// variables are not set.
func TestNoNetworkHasNoProxy(t *testing.T) {
	requireJail(t)
	w := open(t, newTestRepo(t).config())
	if info := w.Info(); info.Network != "none" || info.Egress != nil {
		t.Fatalf("Info: network %q, egress %+v", info.Network, info.Egress)
	}
	res := bash(t, w, "echo \"[$HTTPS_PROXY]\"; curl -sS --max-time 5 -x http://"+egress.ListenAddr+" http://198.18.0.1/ 2>&1")
	if !strings.HasPrefix(res.Output, "[]") || res.ExitCode == 0 {
		t.Fatalf("without network: exit %d: %s", res.ExitCode, res.Output)
	}
}
