// Package engine runs one task: preflight, lane, sandbox, the agent loop,
// finalize and the result an orchestrator reads.
package engine
