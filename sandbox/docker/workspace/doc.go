// Package workspace is the docker sandbox (--sandbox docker): a run's tree
// in a volume, worked on by the tool server inside a locked-down container
// for the run's life, and what is done with a kept volume afterwards
// (ExportVolume, SalvageVolume). Workspace implements sandbox.Workspace.
//
// It talks to the daemon only through a daemon.Engine, which its entry
// points get from a Connect (docker.ConnectEngine in the program, a fake
// in the unit tests), and never imports the Docker SDK. The tests tagged
// docker run it against the machine's daemon.
package workspace
