// Package policy holds the pure rules the engine applies to a worker's bash
// commands and their results: the deny-list with its worktree path rewrite
// (contract E-37), the result fingerprint (E-49), the exit-code parse (E-50)
// and the timeout predicate (E-35). Nothing here does I/O; the callers
// resolve paths and run commands.
//
// # An accident guard, not security
//
// The deny-list stops the natural mistakes of a confused model — cd /,
// rm -rf ../.., git push, curl … | sh — and answers with a BLOCKED text that
// tells it to rework the command. It is not a security boundary: bash is a
// general shell, and an interpreter (python3 -c …), an unlisted variable or
// enough quoting reaches anything the process can. Containment is the
// sandbox's job (the jail on the host, the container in docker mode), and the
// BLOCKED text says so, so that a model does not take the guard for the wall.
//
// # How commands are matched
//
// Every rule scans the whole command text, in the contractual order, and the
// first rule that hits wins; the order is part of the contract because the
// reason is recorded in the transcript (guardrail_block.reason).
//
// Command names (sudo, git, rm, curl, cd, …) match anywhere as whole words,
// not only in command position. A command-position parser would have to
// model every way a shell reaches a command — wrappers (env, xargs, nohup,
// time, find -exec), nested shells (bash -c '…', eval) and substitutions —
// and each case it missed would let an accident through, while a false hit
// costs the model one reworded command. So "echo sudo" is blocked, while
// "pseudocode" is not (no word boundary) and "npm rm leftpad" is allowed
// (rm's rule needs an argument outside the worktree, and leftpad is none).
// "git commit" is never blocked as such: no rule names it.
//
// Matching is ASCII: letters compare case-insensitively by ASCII folding
// only, a word character is an ASCII letter, digit or underscore, and
// whitespace is space, \t, \n, \v, \f and \r. Shell syntax, command names
// and flags are ASCII, so this costs nothing in practice and keeps every
// scanner working on byte offsets of the original text.
//
// Each check runs in time linear in the length of the command (RE2 regular
// expressions plus small scanners for what RE2 cannot express, such as the
// look-ahead in git config's read-only exception).
package policy
