package egresstest

import (
	"io"
	"net"
	"net/http"
	"os"
	"testing"
)

func TestRegistry(t *testing.T) {
	var made *Registry
	t.Run("serve", func(t *testing.T) {
		r := NewRegistry(t)
		made = r
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, r.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if string(body) != r.Body {
			t.Fatalf("registry answered %q", body)
		}
	})
	if made == nil {
		t.Fatal("no registry was made")
	}
	if _, err := os.Stat("/run/netns/" + made.Namespace); err == nil {
		t.Fatalf("namespace %s outlived its test", made.Namespace)
	}
	if _, err := net.InterfaceByName(made.HostInterface); err == nil {
		t.Fatalf("interface %s outlived its test", made.HostInterface)
	}
}
