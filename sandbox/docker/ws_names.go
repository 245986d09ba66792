package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
)

// Labels every object a workspace creates carries (the contract's S-3),
// so leftovers are found, and verified before removal, by label.
const (
	labelRun  = "dirtywork.run"
	labelRepo = "dirtywork.repo"
)

// Paths inside the worker container.
const (
	// workDir is the tree: the work volume's mount point and the path the
	// model is told its files live at.
	workDir = "/work"
	// toolsDir holds the base commit's objects (and the egress proxy's
	// socket): the run's tools volume, root-owned and read-only to the
	// worker.
	toolsDir = "/opt/dirtywork"
	// toolboxDir holds the tool server: the toolbox volume, shared by the
	// runs of one build (ws_toolvol.go), root-owned and mounted read-only.
	toolboxDir = "/opt/dirtywork-bin"
	// toolboxPath is the tool server, the container's only command.
	toolboxPath = toolboxDir + "/dirtywork"
	// baseObjects is the object directory of the base pack, which the
	// worker's repository borrows through objects/info/alternates.
	baseObjects = toolsDir + "/objects"
	// shallowPath is the shallow file a history-free base needs.
	shallowPath = toolsDir + "/shallow"
	// gitDir is the worker's git dir, a tmpfs: commits, index and refs the
	// worker makes live there and are lost on a reset.
	gitDir = "/gitdir"
	// homeDir is the worker's home, a tmpfs.
	homeDir = "/home/worker"
)

// workerUID and workerGID are the container user: the image's own worker
// user. The contract's C-5 takes the invoking user's ids so that files in a
// bind-mounted tree belong to them; nothing is bind-mounted here and the
// export writes files as this process, so the ids never reach the host, and
// a root operator must not make the worker root (it would own the tools
// volume).
const (
	workerUID = 1000
	workerGID = 1000
)

// slugPattern is what a slug may look like: it is part of container and
// volume names, which docker restricts to [a-zA-Z0-9][a-zA-Z0-9_.-]*.
var slugPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,120}$`)

// objectNames are the names of what a workspace creates for one slug.
type objectNames struct {
	Container   string // dw-<slug>: the worker container
	WorkVolume  string // dw-<slug>-work: the tree
	ToolsVolume string // dw-<slug>-tools: the base objects
	// Toolbox is the toolbox volume the run's containers mount (set once
	// the tool server is known; see ws_toolvol.go).
	Toolbox  toolboxVolume
	Setup    string // dw-<slug>-setup: the --setup container
	Measurer string // dw-<slug>-measure: measures the tree from outside
	Egress   string // dw-<slug>-egress: the egress proxy (runs with network)
}

// namesFor returns the names of slug's objects.
func namesFor(slug string) (objectNames, error) {
	if !slugPattern.MatchString(slug) {
		return objectNames{}, fmt.Errorf("slug %q cannot name a container (want [a-zA-Z0-9][a-zA-Z0-9_.-]*)", slug)
	}
	base := "dw-" + slug
	return objectNames{
		Container:   base,
		WorkVolume:  base + "-work",
		ToolsVolume: base + "-tools",
		Setup:       base + "-setup",
		Measurer:    base + "-measure",
		Egress:      base + "-egress",
	}, nil
}

// repoLabel is the dirtywork.repo label of a repository: the hex SHA-256 of
// its resolved path, so a path with any characters makes a valid label and
// runs of one repository are found together.
func repoLabel(repoRoot string) string {
	resolved, err := filepath.EvalSymlinks(repoRoot)
	if err != nil {
		resolved = filepath.Clean(repoRoot)
	}
	sum := sha256.Sum256([]byte(resolved))
	return hex.EncodeToString(sum[:])
}

// labelsFor are the labels of every object of slug's workspace.
func labelsFor(slug, repoRoot string) map[string]string {
	return map[string]string{labelRun: slug, labelRepo: repoLabel(repoRoot)}
}
