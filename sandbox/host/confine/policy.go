package confine

// Access is what a Rule allows beneath its path. Executing follows reading.
type Access string

const (
	// Read allows reading files, listing directories and executing.
	Read Access = "read"
	// Write allows all a tree's owner does: read, create, write, truncate,
	// remove and rename, including moving entries between directories of
	// the tree.
	Write Access = "write"
	// Store allows adding to a git store (the object directory, the
	// directory holding a branch's ref): reading, creating files and
	// directories, writing, and removing and linking files, because git
	// writes an object or ref under a temporary name and links or renames
	// it into place. It does not allow removing directories or making
	// symlinks, devices, FIFOs or sockets.
	Store Access = "store"
	// Device allows reading and writing one device file such as /dev/null,
	// ioctl included.
	Device Access = "device"
)

// Rule grants Access to Path and everything beneath it. Paths are absolute
// with symlinks resolved: Landlock attaches a rule to the file the path
// names when the rule is added.
type Rule struct {
	Path   string `json:"path"`
	Access Access `json:"access"`
	// Optional rules are skipped when the path no longer exists (an entry
	// of /tmp that went away between computing and applying the policy).
	Optional bool `json:"optional,omitempty"`
}

// Namespace selects the namespaces the launcher is started in.
type Namespace int

const (
	// NoNamespace runs the launcher in the caller's namespaces: bash sees
	// the host's mounts (and sockets) and processes.
	NoNamespace Namespace = iota
	// PrivateNamespace starts the launcher in new mount, PID and IPC
	// namespaces. It needs CAP_SYS_ADMIN, i.e. root.
	PrivateNamespace
	// UserNamespace adds a new user namespace that maps the caller's uid
	// and gid to themselves, so an unprivileged caller gets the same
	// private mount, PID and IPC namespaces.
	UserNamespace
)

// String names the namespace mode for messages.
func (n Namespace) String() string {
	switch n {
	case PrivateNamespace:
		return "private mount/PID namespace"
	case UserNamespace:
		return "user namespace with private mount/PID namespaces"
	default:
		return "no namespace"
	}
}

// Policy is everything the launcher applies before it runs bash.
type Policy struct {
	// Bash is the absolute path of the bash executable.
	Bash string `json:"bash"`
	// Command is the script run as bash -c Command.
	Command string `json:"command"`
	// Namespace is the mode the launcher is started in. Mounts (Hide,
	// Mask, Keep, Fresh, ReadOnly) need one; without it they are skipped.
	Namespace Namespace `json:"namespace"`
	// ABI is the Landlock ABI to enforce, 0 for none. The launcher
	// handles every filesystem access right and IPC scope that ABI knows
	// (network access is left alone), and fails rather than enforce less.
	ABI int `json:"abi"`
	// Rules are the Landlock rules; with ABI 0 they are ignored.
	Rules []Rule `json:"rules,omitempty"`
	// Hide are directories covered with an empty tmpfs, so the sockets in
	// them (/run, /var/run) cannot be reached by path.
	Hide []string `json:"hide,omitempty"`
	// Keep are files under a hidden directory that stay visible at their
	// path, bind-mounted back over the tmpfs (the resolv.conf that
	// /etc/resolv.conf links to under /run).
	Keep []string `json:"keep,omitempty"`
	// Mask are files, typically sockets, covered with /dev/null.
	Mask []string `json:"mask,omitempty"`
	// Fresh are directories replaced by a new, empty, world-writable tmpfs
	// (/dev/shm), so bash gets shared memory of its own and none of the
	// host's.
	Fresh []string `json:"fresh,omitempty"`
	// ReadOnly are directories bind-mounted read-only over themselves, for
	// parts of a tree a Store rule would otherwise let bash change (a git
	// object store's info/ and pack/).
	ReadOnly []string `json:"read_only,omitempty"`
	// Probe makes the launcher set everything up and exit 0 instead of
	// running bash.
	Probe bool `json:"probe,omitempty"`
}
