// Package egresstest gives end-to-end tests of the egress proxy what the
// internet would: a "registry" on a public-looking address that only this
// machine routes, in a network namespace of the test's own, joined to the
// host by a veth pair. Nothing of the internet is needed or reached.
// Everything it makes is removed at the test's end, and what a killed test
// left is removed by the next one. It needs root and the ip command.
package egresstest

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// namePrefix starts the names of what a fixture makes; the pid of the
// test process follows.
const namePrefix = "dwe"

// Registry is an HTTP server on a public-looking address, reachable from
// the host (and so from a proxy on it, or in a container on docker's
// bridge) and from nothing else.
type Registry struct {
	// Addr is the registry's address and Port its port; URL is
	// http://Addr:Port.
	Addr netip.Addr
	Port int
	URL  string
	// HostAddr is the host's end of the link: an address of the host, as
	// its public address would be.
	HostAddr netip.Addr
	// Body is what every GET answers.
	Body string
	// Namespace and HostInterface are what the fixture made.
	Namespace, HostInterface string
}

// NewRegistry makes the namespace and the link, serves Body at the
// registry's address, and removes everything when t ends. The addresses
// come from 198.18.0.0/15 (benchmarking, RFC 2544: routed nowhere, and
// not a range the proxy refuses), a /30 drawn at random so that tests in
// parallel do not meet.
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the egress fixture needs root (network namespaces)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal("the egress fixture needs the ip command (iproute2)")
	}
	sweep(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	n := binary.BigEndian.Uint32(b[:])
	// 198.18.0.0/15 has 2^15 /30s.
	base := netip.AddrFrom4([4]byte{198, 18 + byte(n>>15&1), byte(n >> 7), byte(n&0x3f) << 2})
	hostAddr, regAddr := base.Next(), base.Next().Next()
	tag := strconv.Itoa(os.Getpid()) + "x" + strconv.FormatUint(uint64(n&0xffff), 36)
	ns := namePrefix + tag
	hostIf, nsIf := "dwh"+tag, "dwn"+tag
	if len(hostIf) > 15 {
		t.Fatalf("interface name %q is too long", hostIf)
	}
	t.Cleanup(func() { remove(t, ns, hostIf) })
	run(t, "ip", "netns", "add", ns)
	run(t, "ip", "link", "add", hostIf, "type", "veth", "peer", "name", nsIf, "netns", ns)
	run(t, "ip", "addr", "add", hostAddr.String()+"/30", "dev", hostIf)
	run(t, "ip", "link", "set", hostIf, "up")
	run(t, "ip", "-n", ns, "addr", "add", regAddr.String()+"/30", "dev", nsIf)
	run(t, "ip", "-n", ns, "link", "set", nsIf, "up")
	run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	// Answers go back to whoever asked: the host, or a container behind
	// it (docker's bridge masquerades, but need not).
	run(t, "ip", "-n", ns, "route", "add", "default", "via", hostAddr.String())

	r := &Registry{Addr: regAddr, HostAddr: hostAddr, Body: "registry " + tag, Namespace: ns, HostInterface: hostIf}
	l := listenIn(t, ns, net.JoinHostPort(regAddr.String(), "0"))
	r.Port = l.Addr().(*net.TCPAddr).Port
	r.URL = "http://" + net.JoinHostPort(regAddr.String(), strconv.Itoa(r.Port))
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(r.Body))
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

// listenIn opens a TCP listener inside the named namespace: a thread
// enters it just to make the socket, which stays the namespace's, and
// then ends with its goroutine (it is never unlocked, so the runtime
// drops it rather than reuse a thread in the wrong namespace).
func listenIn(t testing.TB, ns, addr string) net.Listener {
	t.Helper()
	type result struct {
		l   net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer func() { _ = f.Close() }()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{err: fmt.Errorf("enter %s: %w", ns, err)}
			return
		}
		l, err := net.Listen("tcp", addr)
		done <- result{l, err}
	}()
	res := <-done
	if res.err != nil {
		t.Fatalf("listen in %s: %v", ns, res.err)
	}
	return res.l
}

// ListenHost serves Body on addr of the host's own namespace (a host
// service the sandbox must not reach: on loopback, on all addresses) and
// returns the port.
func ListenHost(t testing.TB, addr, body string) int {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// run runs a command that must succeed.
func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
}

// remove deletes the link (both ends at once: deleting the namespace
// first would leave the host's end to the kernel's background cleanup)
// and then the namespace.
func remove(t testing.TB, ns, hostIf string) {
	if _, err := net.InterfaceByName(hostIf); err == nil {
		if out, err := exec.Command("ip", "link", "del", hostIf).CombinedOutput(); err != nil && !strings.Contains(string(out), "Cannot find device") {
			t.Errorf("ip link del %s: %v: %s", hostIf, err, out)
		}
	}
	if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such file") {
		t.Errorf("ip netns del %s: %v: %s", ns, err, out)
	}
}

// sweep removes what fixtures of test processes that are gone left.
func sweep(t testing.TB) {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), namePrefix)
		if !ok {
			continue
		}
		pidText, suffix, ok := strings.Cut(rest, "x")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || syscall.Kill(pid, 0) == nil {
			continue
		}
		remove(t, e.Name(), "dwh"+pidText+"x"+suffix)
	}
}
