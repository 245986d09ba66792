package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/docker/docker/client"
)

// Endpoint is where the Docker daemon listens and how dirtywork found it.
type Endpoint struct {
	// Host is the daemon's address as the Engine API client takes it, such
	// as unix:///var/run/docker.sock or tcp://10.0.0.5:2376.
	Host string
	// Source says where Host came from, for messages: "DOCKER_HOST",
	// `docker context "NAME"` or "default socket".
	Source string
	// TLSDir, when not empty, holds the TLS material (ca.pem, cert.pem,
	// key.pem) of the docker context Host came from.
	TLSDir string
	// tlsFromEnv: TLS is configured as the docker CLI does for DOCKER_HOST,
	// from DOCKER_CERT_PATH and DOCKER_TLS_VERIFY.
	tlsFromEnv bool
}

// String names the endpoint and its source, as error messages show it.
func (e Endpoint) String() string {
	return fmt.Sprintf("%s (%s)", e.Host, e.Source)
}

// defaultContext is the docker CLI's built-in context: DOCKER_HOST or the
// default socket. It is never stored on disk.
const defaultContext = "default"

// DiscoverEndpoint finds the daemon as the docker CLI does, reading the
// environment through getenv (os.Getenv outside tests):
//
//  1. DOCKER_HOST, when set;
//  2. else the current docker context: DOCKER_CONTEXT, else currentContext
//     in config.json of the CLI's configuration directory ($DOCKER_CONFIG,
//     else $HOME/.docker), whose endpoint is in
//     contexts/meta/<sha256 of the name>/meta.json there;
//  3. else the default socket.
//
// A context that is named but not stored, or unreadable configuration, is
// an error rather than a silent fall back to another daemon.
func DiscoverEndpoint(getenv func(string) string) (Endpoint, error) {
	if host := getenv(client.EnvOverrideHost); host != "" {
		return checkHost(Endpoint{Host: host, Source: client.EnvOverrideHost, tlsFromEnv: true})
	}
	configDir := getenv("DOCKER_CONFIG")
	if configDir == "" {
		home := getenv("HOME")
		if home == "" {
			return defaultEndpoint(), nil
		}
		configDir = filepath.Join(home, ".docker")
	}
	name := getenv("DOCKER_CONTEXT")
	if name == "" {
		var err error
		if name, err = currentContext(configDir); err != nil {
			return Endpoint{}, err
		}
	}
	if name == "" || name == defaultContext {
		return defaultEndpoint(), nil
	}
	return contextEndpoint(configDir, name)
}

func defaultEndpoint() Endpoint {
	return Endpoint{Host: client.DefaultDockerHost, Source: "default socket"}
}

// currentContext reads currentContext from the CLI's config.json; a
// missing file means the default context.
func currentContext(configDir string) (string, error) {
	path := filepath.Join(configDir, "config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read docker CLI configuration: %w", err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("parse docker CLI configuration %s: %w", path, err)
	}
	return cfg.CurrentContext, nil
}

// contextEndpoint reads the docker endpoint of the stored context name.
// The CLI stores each context under the hex SHA-256 of its name, so any
// name maps to a safe directory.
func contextEndpoint(configDir, name string) (Endpoint, error) {
	sum := sha256.Sum256([]byte(name))
	id := hex.EncodeToString(sum[:])
	path := filepath.Join(configDir, "contexts", "meta", id, "meta.json")
	data, err := os.ReadFile(path)
	if err != nil {
		return Endpoint{}, fmt.Errorf("read docker context %q: %w", name, err)
	}
	var meta struct {
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return Endpoint{}, fmt.Errorf("parse docker context %q (%s): %w", name, path, err)
	}
	host := meta.Endpoints["docker"].Host
	if host == "" {
		return Endpoint{}, fmt.Errorf("docker context %q (%s) has no docker endpoint", name, path)
	}
	ep := Endpoint{Host: host, Source: fmt.Sprintf("docker context %q", name)}
	tlsDir := filepath.Join(configDir, "contexts", "tls", id, "docker")
	if fi, err := os.Stat(tlsDir); err == nil && fi.IsDir() {
		ep.TLSDir = tlsDir
	}
	return checkHost(ep)
}

// checkHost refuses hosts the Engine API client cannot reach by itself.
// ssh:// needs the docker CLI's connection helper (an ssh process), which
// dirtywork does not use.
func checkHost(ep Endpoint) (Endpoint, error) {
	if strings.HasPrefix(ep.Host, "ssh://") {
		return Endpoint{}, fmt.Errorf("docker daemon %s: ssh:// endpoints are not supported; "+
			"forward the daemon's socket (ssh -L /tmp/docker.sock:/var/run/docker.sock HOST) and set "+
			"DOCKER_HOST=unix:///tmp/docker.sock", ep)
	}
	if _, err := client.ParseHostURL(ep.Host); err != nil {
		return Endpoint{}, fmt.Errorf("docker daemon %s: %w", ep, err)
	}
	return ep, nil
}
