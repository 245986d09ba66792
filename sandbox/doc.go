// Package sandbox defines the workspace a run's tools act on. Its two
// implementations are host (os.Root confinement, bash under Landlock) and
// docker (the Engine API, a volume-backed tree and an in-container tool
// server).
package sandbox
