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
// bytes of one JSON object. A request is {"id", "kind", "args"}; its reply
// is {"id", "result"} or {"id", "error": {"kind", "message"}}. Ids are
// chosen by the client and are never 0; a reply with id 0 answers a frame
// the server could not attribute. Several requests may be in flight at once
// (the watchdog measures the tree while a command runs); "cancel" names one
// of them by its id and gets no reply of its own, the cancelled request
// answers "canceled".
//
// Text the model wrote or reads (paths, contents, patterns, results,
// output) travels as JSON byte strings, that is base64: it arrives byte for
// byte even when it is not valid UTF-8, and it grows by exactly 4/3 where
// JSON string escaping could take 6 bytes per byte, so the frame caps follow
// from the tool limits.
//
// # Trust
//
// The server runs as the same user as the worker's commands, so the client
// treats it as untrusted: every reply is size-capped and strictly decoded,
// every call has a deadline, and a reply that is malformed, oversized,
// unasked for or missing breaks the client with ErrServerGone, which the
// docker workspace answers with a sandbox reset. The server makes itself
// non-dumpable, so the worker can neither ptrace it nor reach its stream
// through /proc.
package toolbox
