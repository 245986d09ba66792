// Package toolbox is the tool server that runs inside a docker sandbox for
// the life of a run (`dirtywork toolbox`), and the client the docker
// workspace talks to it with.
//
// One process inside the container answers every tool call over one
// attached stream, so a call costs a round trip instead of a `docker
// exec`. The file tools, grep, list_dir and the tree measurement run the
// same fsops code as host mode, so both modes give byte-identical results;
// bash runs in a session of its own, and a timeout kills its whole process
// group inside the container.
//
// # Protocol
//
// Both directions carry frames: a 4-byte big-endian length, then that many
// bytes: the 8-byte big-endian request id, a 32-byte HMAC-SHA256 tag, and
// one JSON object. A request is {"id", "kind", "args"}; its reply is
// {"id", "result"} or {"id", "error": {"kind", "message"}}, and the JSON
// id must be the frame's. Ids are chosen by the client, are never 0 and
// are used once; a reply with id 0 answers a frame the server could not
// attribute. Several requests may be in flight at once (the watchdog
// measures the tree while a command runs); "cancel" names one of them by
// its id and gets no reply of its own, the cancelled request answers
// "canceled".
//
// The first request must be the hello, which hands the server a fresh
// 32-byte key; every frame after it, both ways, is tagged with
// HMAC-SHA256(key, direction || id || body). A server ends at a first
// frame that is not a hello, or a later one that fails its tag or repeats
// an id; a client breaks (ErrServerGone) at a reply that fails its tag.
//
// Text the model wrote or reads (paths, contents, patterns, results,
// output) travels as JSON byte strings, that is base64: it arrives byte for
// byte even when it is not valid UTF-8, and it grows by exactly 4/3 where
// JSON string escaping could take 6 bytes per byte, so the frame caps follow
// from the tool limits.
//
// # Trust
//
// The server runs as the same user as the worker's commands, so two walls
// keep the commands from answering in its name. First, the server is its
// PID namespace's init (pid 1 of the container, no docker-init) and
// non-dumpable from its first instruction (Main), so no command can ptrace
// it, open its stream through /proc/1/fd or read its memory, and no other
// process holds the stream. Second, the key travels only on the stream
// (never argv or environment), so a frame written by anything but the
// server fails its tag. Behind both, the client still treats the server as
// untrusted: every reply is size-capped and strictly decoded, every call
// has a deadline, and a reply that is unauthenticated, malformed,
// oversized, unasked for or missing breaks the client with ErrServerGone,
// which the docker workspace answers with a sandbox reset.
package toolbox
