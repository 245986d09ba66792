// Package egress is the only way out of a sandbox that was given the
// network (--allow-network, --setup): an HTTP forward proxy that lets
// through only the hosts and ports on an allowlist, and never to an
// address of the host's own or of a private, loopback, link-local,
// multicast or otherwise non-public range.
//
// The sandbox itself keeps no route out: in host mode the jail has a
// network namespace of its own with only lo, in docker mode the container
// has no network at all. The proxy listens on a unix socket that is bound
// into the sandbox; inside, a forwarder on 127.0.0.1 (Forward, hosted by
// the tool server, pid 1) carries each TCP connection to that socket, and
// the proxy variables (Env) point every client at it. A command that
// ignores the variables finds nothing to connect to.
//
// The proxy resolves names itself and dials only an address it vetted: the
// resolved addresses are checked (Forbidden, plus the host's own
// addresses), the request is refused when none is left, and the dial goes
// to the vetted address, never to the name, so a second answer of the
// name's server (DNS rebinding) never reaches a socket. The dialer checks
// the address it connects to once more. IP-literal requests are checked
// the same way.
//
// Every decision (allowed, refused, failed: host, port, the address
// dialled, the reason) is reported as a Decision; Recorder writes them as
// JSON lines to the run's egress.log and keeps the counts for run_end.
//
// Default allowlists come from the repository's lockfiles and manifests
// (DefaultHosts); Rule and ParseRules read the operator's --allow-host.
package egress
