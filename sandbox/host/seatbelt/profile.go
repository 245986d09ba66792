package seatbelt

import (
	"strconv"
	"strings"
)

// DefaultPath is where macOS keeps sandbox-exec.
const DefaultPath = "/usr/bin/sandbox-exec"

// Param is one parameter of a profile: sandbox-exec -DName=Value, read in
// the profile as (param "Name").
type Param struct {
	Name, Value string
}

// Profile is a policy written in SBPL, and the parameters it reads.
type Profile struct {
	Text   string
	Params []Param
}

// Command is the command line that runs argv under the profile:
// sandbox-exec -p TEXT -DNAME=VALUE ... -- argv. sandbox-exec applies the
// profile to itself and executes argv, which keeps it for good, as do
// all its descendants.
func (pr Profile) Command(sandboxExec string, argv []string) []string {
	out := make([]string, 0, 4+len(pr.Params)+len(argv))
	out = append(out, sandboxExec, "-p", pr.Text)
	for _, p := range pr.Params {
		out = append(out, "-D"+p.Name+"="+p.Value)
	}
	out = append(out, "--")
	return append(out, argv...)
}

// base is the part of every profile that names no path: what any
// process needs besides files, each grant with why.
var base = []string{
	"(version 1)",
	"(deny default)",
	"",
	"; Programs run and fork; they signal and inspect only processes of this",
	"; sandbox: the tool server and what it starts.",
	"(allow process-exec process-fork)",
	"(allow signal (target same-sandbox))",
	"(allow process-info* (target same-sandbox))",
	"",
	"; Facts build tools size themselves by: CPUs, memory, page size, the OS's",
	"; version. Not other processes' command lines (kern.procargs*).",
	"(allow sysctl-read",
	`  (sysctl-name-prefix "hw.")`,
	`  (sysctl-name-prefix "machdep.cpu.")`,
	`  (sysctl-name "kern.argmax")`,
	`  (sysctl-name "kern.boottime")`,
	`  (sysctl-name "kern.hostname")`,
	`  (sysctl-name "kern.maxfilesperproc")`,
	`  (sysctl-name "kern.maxproc")`,
	`  (sysctl-name "kern.osproductversion")`,
	`  (sysctl-name "kern.osrelease")`,
	`  (sysctl-name "kern.ostype")`,
	`  (sysctl-name "kern.osversion")`,
	`  (sysctl-name "kern.usrstack64")`,
	`  (sysctl-name "kern.version")`,
	`  (sysctl-name-prefix "kern.proc.pid.")`,
	`  (sysctl-name-prefix "kern.proc.pgrp.")`,
	`  (sysctl-name "sysctl.proc_cputype")`,
	`  (sysctl-name "vm.loadavg"))`,
	"; The CPUs' load (node's os.cpus asks Mach's host port).",
	"(allow mach-host*)",
	"",
	"; Mach services, the fewest ordinary tool chains need: users and groups",
	"; (getpwuid: git, ssh, python's pwd), the notifications libc waits on",
	"; (a changed time zone), CoreFoundation preferences (xcrun, behind",
	"; /usr/bin/git and the compilers, reads its settings through them).",
	"(allow mach-lookup",
	`  (global-name "com.apple.system.opendirectoryd.libinfo")`,
	`  (global-name "com.apple.system.notification_center")`,
	`  (global-name "com.apple.cfprefsd.daemon")`,
	`  (global-name "com.apple.cfprefsd.agent"))`,
	`(allow ipc-posix-shm-read-data (ipc-posix-name "apple.shm.notification_center"))`,
	"(allow user-preference-read)",
	"; Named semaphores: python's multiprocessing locks.",
	"(allow ipc-posix-sem)",
	"; Pseudo-terminals for the commands that want one.",
	"(allow pseudo-tty)",
}

// networked is added to a profile with a proxy port: sockets may be
// made, and TLS certificates checked by the system's trust daemon (curl,
// Go and Swift programs verify through it).
var networked = []string{
	"(allow system-socket)",
	"(allow mach-lookup",
	`  (global-name "com.apple.trustd")`,
	`  (global-name "com.apple.trustd.agent"))`,
}

// Profile writes the policy's rules as a profile. The run's paths are
// parameters, never text of the profile; the only strings written out
// are this package's constants, quoted.
func (p Policy) Profile() (Profile, error) {
	rs, net, err := p.rules()
	if err != nil {
		return Profile{}, err
	}
	var b strings.Builder
	var params []Param
	seen := map[string]bool{}
	// filter writes m, declaring its parameter on first use.
	filter := func(m matcher) string {
		switch m.kind {
		case regex:
			return `(regex #"` + m.re.String() + `")`
		case literal:
			return "(literal " + value(m, &params, seen) + ")"
		default:
			return "(subpath " + value(m, &params, seen) + ")"
		}
	}
	for _, l := range base {
		b.WriteString(l + "\n")
	}
	for _, r := range rs {
		if r.why != "" {
			b.WriteString("\n; " + r.why + "\n")
		}
		f := filter(r.match)
		if len(r.except) > 0 {
			parts := []string{f}
			for _, e := range r.except {
				parts = append(parts, "(require-not "+filter(e)+")")
			}
			f = "(require-all " + strings.Join(parts, " ") + ")"
		}
		b.WriteString("(allow " + operations[r.access] + " " + f + ")\n")
	}
	b.WriteString("\n; The network: ")
	if len(net) == 0 {
		b.WriteString("none.\n")
	} else {
		b.WriteString(net[0].why + ".\n")
		for _, l := range networked {
			b.WriteString(l + "\n")
		}
		for _, n := range net {
			b.WriteString(`(allow network-outbound (remote ip "localhost:` + strconv.Itoa(n.port) + `"))` + "\n")
		}
	}
	return Profile{Text: b.String(), Params: params}, nil
}

// operations are the SBPL operations each access level allows.
var operations = map[Access]string{
	Metadata: "file-read-metadata",
	Read:     "file-read* file-map-executable",
	Write:    "file-read* file-write* file-ioctl file-map-executable",
}

// value is m's path in the profile: its parameter, declared in params
// the first time, or the quoted constant.
func value(m matcher, params *[]Param, seen map[string]bool) string {
	if m.param == "" {
		return quote(m.path)
	}
	if !seen[m.param] {
		seen[m.param] = true
		*params = append(*params, Param{Name: m.param, Value: m.path})
	}
	return `(param ` + quote(m.param) + `)`
}

// quote is s as an SBPL string literal.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
