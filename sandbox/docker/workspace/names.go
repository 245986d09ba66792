package workspace

import "github.com/dirtywork/dirtywork/sandbox/docker/daemon"

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
	// runs of one build (toolvol.go), root-owned and mounted read-only.
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

// objectNames are the names of what a workspace creates for one slug.
type objectNames struct {
	daemon.Names
	// Toolbox is the toolbox volume the run's containers mount (set once
	// the tool server is known; see toolvol.go).
	Toolbox toolboxVolume
}

// namesFor returns the names of slug's objects.
func namesFor(slug string) (objectNames, error) {
	n, err := daemon.NamesFor(slug)
	return objectNames{Names: n}, err
}

// labelsFor are the labels of every object of slug's workspace.
func labelsFor(slug, repoRoot string) map[string]string {
	return daemon.RunLabels(slug, repoRoot)
}
