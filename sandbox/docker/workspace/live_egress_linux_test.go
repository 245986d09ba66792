//go:build docker

package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dirtywork/dirtywork/sandbox/docker/dockertest"
	"github.com/dirtywork/dirtywork/sandbox/egress"
	"github.com/dirtywork/dirtywork/sandbox/egress/egresstest"
)

// egressTargets are a run's view of the network in the egress tests: a
// registry on a public-looking address (a network namespace of the
// test's, reachable from docker's bridge through the host), and what
// must stay out of reach although the sidecar itself can reach it: the
// host's loopback listener, a listener on all of the host's addresses
// through docker's gateway and through the host's own address, and cloud
// metadata.
type egressTargets struct {
	reg     *egresstest.Registry
	refused []string // host:port, each on the allowlist
}

func newEgressTargets(t *testing.T) egressTargets {
	t.Helper()
	reg := egresstest.NewRegistry(t)
	loop := egresstest.ListenHost(t, "127.0.0.1:0", "host loopback service")
	anyPort := egresstest.ListenHost(t, "0.0.0.0:0", "host service on every address")
	gateway := dockertest.BridgeGateway(t)
	return egressTargets{reg: reg, refused: []string{
		fmt.Sprintf("127.0.0.1:%d", loop),
		fmt.Sprintf("%s:%d", gateway, anyPort),
		fmt.Sprintf("%s:%d", reg.HostAddr, anyPort),
		"169.254.169.254:80",
	}}
}

// allow names the registry and every refused target, so that what
// refuses them is their address, not the list.
func (e egressTargets) allow(t *testing.T) egress.Allowlist {
	t.Helper()
	l, err := egress.ParseRules(append([]string{fmt.Sprintf("%s:%d", e.reg.Addr, e.reg.Port)}, e.refused...)...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// script probes the network from inside: the registry through the proxy
// (GET and CONNECT), the refused targets through the proxy (their HTTP
// codes), and everything directly, ignoring the proxy variables.
func (e egressTargets) script() string {
	var b strings.Builder
	fmt.Fprintf(&b, "echo get=$(curl -sS --max-time 10 %s/pkg 2>&1)\n", e.reg.URL)
	fmt.Fprintf(&b, "echo connect=$(curl -sS --max-time 10 --proxytunnel %s/pkg 2>&1)\n", e.reg.URL)
	for _, target := range e.refused {
		fmt.Fprintf(&b, "echo proxied %s=$(curl -s -o /dev/null -w '%%{http_code}' --max-time 10 -x http://%s --noproxy '' http://%s/)\n", target, egress.ListenAddr, target)
	}
	for _, target := range append([]string{strings.TrimPrefix(e.reg.URL, "http://")}, e.refused...) {
		fmt.Fprintf(&b, "curl -s --max-time 5 --noproxy '*' http://%s/ >/dev/null && echo direct %s=reached || echo direct %s=unreachable\n", target, target, target)
	}
	return b.String()
}

// check fails the test on any probe that did not go as it must.
func (e egressTargets) check(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{"get=" + e.reg.Body, "connect=" + e.reg.Body} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("the registry through the proxy: want %q in\n%s", want, out)
		}
	}
	for _, target := range e.refused {
		if !strings.Contains(out, "proxied "+target+"=403\n") {
			t.Errorf("%s through the proxy: want 403 in\n%s", target, out)
		}
	}
	if strings.Contains(out, "=reached") {
		t.Errorf("something was reached around the proxy:\n%s", out)
	}
}

func TestLiveSetupNetworkIsTheProxyOnly(t *testing.T) {
	targets := newEgressTargets(t)
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"README.md": "hi\n"})
	cfg := liveConfig(slug, r)
	cfg.Allow = targets.allow(t)
	var setupOut string
	cfg.Setup = targets.script() + "exit 0"
	cfg.OnSetup = func(_ string, _ *int, output string, _ float64) { setupOut = output }
	start := time.Now()
	w := openLive(t, cfg)
	t.Logf("open with --setup took %v", time.Since(start))
	targets.check(t, setupOut)
	if s, ok := w.Settings()["egress"].(map[string]any); !ok || fmt.Sprint(s["for"]) != "[setup]" || w.Settings()["network"] != "none" {
		t.Errorf("settings: network %v, egress %v", w.Settings()["network"], w.Settings()["egress"])
	}

	// The worker has no network: the proxy is gone before its first
	// command, its socket included, though the tools volume shows it.
	res, err := w.Bash(t.Context(), fmt.Sprintf(
		"echo [$HTTPS_PROXY]; curl -s --max-time 5 -x http://%s %s/ || echo no-proxy; curl -s --max-time 5 --unix-socket %s %s/ || echo no-socket",
		egress.ListenAddr, targets.reg.URL, egressSocket, targets.reg.URL), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Output, "[]") || !strings.Contains(res.Output, "no-proxy") || !strings.Contains(res.Output, "no-socket") {
		t.Fatalf("the worker without --allow-network: %s", res.Output)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fin.Egress == nil || fin.Egress.Allowed != 2 || fin.Egress.Refused != len(targets.refused) {
		t.Fatalf("summary %+v", fin.Egress)
	}
	log, err := os.ReadFile(filepath.Join(r.runDir, egress.LogName))
	if err != nil || strings.Count(string(log), "\n") != 2+len(targets.refused) {
		t.Fatalf("egress.log: %v\n%s", err, log)
	}
}

func TestLiveWorkerNetworkIsTheProxyOnly(t *testing.T) {
	targets := newEgressTargets(t)
	slug := newSlug(t)
	r := newTestRepo(t, slug, map[string]string{"README.md": "hi\n"})
	cfg := liveConfig(slug, r)
	cfg.Allow = targets.allow(t)
	cfg.AllowNetwork = true
	start := time.Now()
	w := openLive(t, cfg)
	res, err := w.Bash(t.Context(), "true", 30*time.Second) // waits for the start
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("first command: %v %+v", err, res)
	}
	t.Logf("open with --allow-network, to the first command: %v", time.Since(start))
	if w.Settings()["network"] != "proxy" {
		t.Errorf("settings: network %v", w.Settings()["network"])
	}
	res, err = w.Bash(t.Context(), targets.script(), 120*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	targets.check(t, res.Output)
	// The socket's directory is the sidecar's: the worker cannot plant
	// anything there.
	if res, _ := w.Bash(t.Context(), "touch "+egressDir+"/x 2>&1 || echo refused", 30*time.Second); !strings.Contains(res.Output, "refused") {
		t.Errorf("the worker wrote into the sidecar's directory: %s", res.Output)
	}
	fin, err := w.Finalize(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fin.Egress == nil || fin.Egress.Allowed != 2 || fin.Egress.Refused != len(targets.refused) {
		t.Fatalf("summary %+v", fin.Egress)
	}
}
