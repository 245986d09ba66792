package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/client"
)

// writeContext stores a docker context the way the docker CLI does, under
// configDir, with its docker endpoint at host.
func writeContext(t *testing.T, configDir, name, host string, withTLS bool) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	meta := `{"Name":"` + name + `","Metadata":{},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
	writeFile(t, filepath.Join(configDir, "contexts", "meta", id, "meta.json"), meta)
	if withTLS {
		writeFile(t, filepath.Join(configDir, "contexts", "tls", id, "docker", "ca.pem"), "not a real certificate")
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoverEndpoint(t *testing.T) {
	// One home and one DOCKER_CONFIG directory with contexts; each case
	// picks its environment.
	home := t.TempDir()
	dotDocker := filepath.Join(home, ".docker")
	writeFile(t, filepath.Join(dotDocker, "config.json"), `{"auths":{},"currentContext":"remote"}`)
	writeContext(t, dotDocker, "remote", "tcp://10.0.0.5:2376", true)
	writeContext(t, dotDocker, "other", "unix:///run/other.sock", false)
	writeContext(t, dotDocker, "tunnel", "ssh://me@build-box", false)
	writeContext(t, dotDocker, "broken", "", false)

	altConfig := t.TempDir()
	writeFile(t, filepath.Join(altConfig, "config.json"), `{"currentContext":"alt"}`)
	writeContext(t, altConfig, "alt", "unix:///run/alt.sock", false)

	defaultHome := t.TempDir()
	writeFile(t, filepath.Join(defaultHome, ".docker", "config.json"), `{"currentContext":"default"}`)
	noContextHome := t.TempDir()
	writeFile(t, filepath.Join(noContextHome, ".docker", "config.json"), `{"auths":{}}`)
	missingHome := t.TempDir()
	writeFile(t, filepath.Join(missingHome, ".docker", "config.json"), `{"currentContext":"gone"}`)
	badHome := t.TempDir()
	writeFile(t, filepath.Join(badHome, ".docker", "config.json"), `{"currentContext":`)

	tests := []struct {
		name       string
		env        map[string]string
		wantHost   string
		wantSource string
		wantTLS    bool
		wantErr    string
	}{
		{
			name: "DOCKER_HOST wins over the context", env: map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2375", "HOME": home},
			wantHost: "tcp://127.0.0.1:2375", wantSource: "DOCKER_HOST",
		},
		{
			name: "current context from config.json", env: map[string]string{"HOME": home},
			wantHost: "tcp://10.0.0.5:2376", wantSource: `docker context "remote"`, wantTLS: true,
		},
		{
			name: "DOCKER_CONTEXT overrides config.json", env: map[string]string{"HOME": home, "DOCKER_CONTEXT": "other"},
			wantHost: "unix:///run/other.sock", wantSource: `docker context "other"`,
		},
		{
			name: "DOCKER_CONFIG replaces ~/.docker", env: map[string]string{"HOME": home, "DOCKER_CONFIG": altConfig},
			wantHost: "unix:///run/alt.sock", wantSource: `docker context "alt"`,
		},
		{
			name: "context default is the default socket", env: map[string]string{"HOME": defaultHome},
			wantHost: client.DefaultDockerHost, wantSource: "default socket",
		},
		{
			name: "DOCKER_CONTEXT=default", env: map[string]string{"HOME": home, "DOCKER_CONTEXT": "default"},
			wantHost: client.DefaultDockerHost, wantSource: "default socket",
		},
		{
			name: "config without a context", env: map[string]string{"HOME": noContextHome},
			wantHost: client.DefaultDockerHost, wantSource: "default socket",
		},
		{
			name: "no config at all", env: map[string]string{"HOME": t.TempDir()},
			wantHost: client.DefaultDockerHost, wantSource: "default socket",
		},
		{
			name: "no HOME", env: map[string]string{},
			wantHost: client.DefaultDockerHost, wantSource: "default socket",
		},
		{
			name: "named context not stored", env: map[string]string{"HOME": missingHome},
			wantErr: `read docker context "gone"`,
		},
		{
			name: "unparsable config.json", env: map[string]string{"HOME": badHome},
			wantErr: "parse docker CLI configuration",
		},
		{
			name: "context without a docker endpoint", env: map[string]string{"HOME": home, "DOCKER_CONTEXT": "broken"},
			wantErr: `docker context "broken"`,
		},
		{
			name: "ssh context", env: map[string]string{"HOME": home, "DOCKER_CONTEXT": "tunnel"},
			wantErr: "ssh:// endpoints are not supported",
		},
		{
			name: "ssh DOCKER_HOST", env: map[string]string{"DOCKER_HOST": "ssh://me@build-box"},
			wantErr: "ssh:// endpoints are not supported",
		},
		{
			name: "DOCKER_HOST without a scheme", env: map[string]string{"DOCKER_HOST": "localhost"},
			wantErr: "docker daemon localhost (DOCKER_HOST)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := DiscoverEndpoint(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q (endpoint %+v)", err, tt.wantErr, ep)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ep.Host != tt.wantHost || ep.Source != tt.wantSource {
				t.Errorf("endpoint = %s from %q, want %s from %q", ep.Host, ep.Source, tt.wantHost, tt.wantSource)
			}
			if got := ep.TLSDir != ""; got != tt.wantTLS {
				t.Errorf("TLSDir = %q, want TLS material %v", ep.TLSDir, tt.wantTLS)
			}
			if tt.wantTLS {
				if _, err := os.Stat(filepath.Join(ep.TLSDir, "ca.pem")); err != nil {
					t.Errorf("TLSDir %s does not hold the context's ca.pem: %v", ep.TLSDir, err)
				}
			}
		})
	}
}

func TestConnectToChecksTheHost(t *testing.T) {
	t.Parallel()
	cl, err := ConnectTo("unix:///tmp/dw-second.sock")
	if err != nil || cl.endpoint.Host != "unix:///tmp/dw-second.sock" || cl.endpoint.Source != "--docker-host" {
		t.Fatalf("%+v %v", cl, err)
	}
	for _, bad := range []string{"ssh://builder", "not a url"} {
		if _, err := ConnectTo(bad); err == nil {
			t.Errorf("ConnectTo(%q) took it", bad)
		}
	}
}
