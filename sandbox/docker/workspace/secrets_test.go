package workspace

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/dirtywork/dirtywork/sandbox/docker/daemon"
	"github.com/dirtywork/dirtywork/sandbox/egress"
)

// TestNoContainerInheritsProviderKeys: every container a run makes gets an
// environment built from nothing, so a model provider's key in
// dirtywork's own environment (ANTHROPIC_API_KEY, read only to talk to
// the Anthropic API) reaches none of them.
func TestNoContainerInheritsProviderKeys(t *testing.T) {
	const secret = "sk-ant-docker-secret-value"
	t.Setenv("ANTHROPIC_API_KEY", secret)
	t.Setenv("OPENAI_API_KEY", secret)
	t.Setenv("DIRTYWORK_API_KEY", secret)
	n, err := namesFor("run-1")
	if err != nil {
		t.Fatal(err)
	}
	n.Toolbox, err = toolboxVolumeOf(Toolbox{Data: []byte("ELF")})
	if err != nil {
		t.Fatal(err)
	}
	l, err := limitsOf(Config{Memory: "2g", CPUs: 1, TmpSize: "100m", GitdirSize: "64m"})
	if err != nil {
		t.Fatal(err)
	}
	labels := labelsFor("run-1", t.TempDir())
	allow, err := egress.ParseRules("pypi.org")
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]daemon.ContainerSpec{
		"worker":          workerSpec(n, "img", labels, l, false),
		"worker, network": workerSpec(n, "img", labels, l, true),
		"setup":           setupSpec(n, "img", labels, l, "pip install -r requirements.txt"),
		"egress":          egressSpec(n, "img", labels, allow, []netip.Addr{netip.MustParseAddr("10.0.0.1")}),
		"measurer":        measurerSpec(n, "img", labels),
		"export":          exportSpec(n, "img", labels, l),
		"reap marker":     reapMarkerSpec("img", labels, []string{n.WorkVolume}, n.WorkVolume),
		"toolbox fill":    fillSpec(n.Toolbox, "img"),
	}
	for name, s := range specs {
		for _, kv := range append(append(append([]string{}, s.Env...), s.Cmd...), s.Entrypoint...) {
			if strings.Contains(kv, secret) || strings.HasPrefix(kv, "ANTHROPIC_") || strings.Contains(kv, "API_KEY") {
				t.Errorf("%s container: %q", name, kv)
			}
		}
	}
}
