// Package jail runs one program (the tool server) in a jail built for one
// run: a container without Docker.
//
// The program is pid 1 of a new PID namespace, in new user, mount, IPC,
// UTS, cgroup and network namespaces (the network is shared with the host
// only when asked). Its root is constructed: a fresh tmpfs it was
// pivot_root'ed into, holding read-only binds of the system directories
// (/usr, /bin, /lib*, /sbin, /etc less its secrets), the declared extra
// read-only paths, the configured mounts, a private size-limited /tmp, a
// minimal /dev, a fresh /proc and no /sys. Nothing else of the host is
// there: no home, no /run, no host /tmp, no sockets.
//
// When the operator is root, the program runs as a per-run unprivileged
// uid on the host (uid 0 mapped to 0 would still pass owner checks on
// root's files), and writable mounts are idmapped so that what it writes
// lands on disk owned by the operator; a non-root operator's program runs
// as the operator. Inside, it sees itself as the operator either way. It
// keeps no capability in any set, runs with no_new_privs, under Landlock
// (the second layer: only what the mounts expose) and a seccomp filter
// (the third: see package seccomp), and within pids, memory and CPU limits
// (cgroups where they can be had, else rlimits and a niceness). The tables
// every user of the host shares are bounded too: RLIMIT_NOFILE times the
// pids limit stays within a quarter of the open files table, and the
// jail's devpts holds at most MaxPtys terminals.
//
// Go cannot fork without exec, so the jail's setup is a re-execution of the
// running binary in a hidden mode: every binary that starts jails must call
// MaybeRun first thing in main (and test binaries in TestMain). The parent
// does what needs the host's privileges (uid and gid maps, idmapped
// mounts, cgroup placement) and hands the child its mounts as descriptors;
// the child builds the root, drops everything and executes the program.
//
// A layer that cannot be set up is an error from Start, never a silent
// downgrade, unless Config.AllowUnconfined says to run without it; Info
// then reports it off, with the reason. Probe tries every layer out for
// preflight and for `dirtywork doctor`.
package jail
