package docker

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// fakeAPIVersion is the API version the fake engine negotiates: that of
// the oldest engine dirtywork is used with (Debian 12's docker.io).
const fakeAPIVersion = "1.41"

// versionPrefix is the /v1.xx prefix of versioned Engine API paths.
var versionPrefix = regexp.MustCompile(`^/v[0-9.]+`)

// newFakeEngine serves the Engine API with handle on a local HTTP server
// and returns a Client for it. The fake answers the version negotiation
// ping itself and hands handle requests with the /v1.xx prefix stripped
// from the path, so a handler switches on paths such as "/build".
func newFakeEngine(t *testing.T, handle http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_ping" {
			w.Header().Set("Api-Version", fakeAPIVersion)
			_, _ = w.Write([]byte("OK"))
			return
		}
		if !strings.HasPrefix(r.URL.Path, "/v"+fakeAPIVersion+"/") {
			t.Errorf("%s %s: not the negotiated API version %s", r.Method, r.URL.Path, fakeAPIVersion)
		}
		r.URL.Path = versionPrefix.ReplaceAllString(r.URL.Path, "")
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	cl, err := NewClient(Endpoint{Host: "tcp://" + srv.Listener.Addr().String(), Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// engineError answers as the daemon does when it refuses: a status code
// and a JSON message.
func engineError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// engineJSON answers with v as JSON.
func engineJSON(t *testing.T, w http.ResponseWriter, v any) {
	t.Helper()
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(v); err != nil {
		t.Error(err)
	}
}
