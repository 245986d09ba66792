"""Acceptance check of roman.ToRoman on numbers drawn now.

Run as `python3 -I -S /acceptance/check.py` in /work. The subject's package is built into a
driver program in /tmp (a module of its own that imports example.com/roman from /work) and run
only as a child process; the numbers come from os.urandom, so no answer can be known in advance.
"""
import ctypes
import os
import random
import subprocess
import sys
import tempfile

GO = "/usr/bin/go"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
# The build reads the subject's go.mod and sources, and nothing else of ours or theirs: no
# network, no workspace, no environment file, no toolchain switch, no cgo (no C compiler either).
GO_ENV = dict(ENV, GOCACHE="/tmp/gocache", GOPATH="/tmp/gopath", GOFLAGS="-mod=mod", GOPROXY="off",
              GOSUMDB="off", GOWORK="off", GOENV="off", GOTOOLCHAIN="local", GO111MODULE="on",
              CGO_ENABLED="0")
CASES = 400


def harden():
    """Make this process non-dumpable: a child of the same user can no longer read its memory
    or open its files through /proc, nor attach to it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
        sys.exit("check: cannot make the checker non-dumpable")


def run(argv, stdin=b"", timeout=30, cwd="/work", env=ENV):
    """Run argv in /work with a clean environment; output goes to files, so a grandchild that
    keeps a pipe open cannot hang the check. Returns (exit code, stdout, stderr), code None
    when it timed out."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err, cwd=cwd,
                             env=env, start_new_session=True)
        try:
            p.communicate(stdin, timeout=timeout)
            code = p.returncode
        except subprocess.TimeoutExpired:
            code = None
        finally:
            try:
                os.killpg(p.pid, 9)
            except OSError:
                pass
            p.wait()
        out.seek(0)
        err.seek(0)
        return code, out.read(1 << 20), err.read(4096)


DRIVER = """package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"

	"example.com/roman"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		n, err := strconv.Atoi(in.Text())
		if err != nil {
			os.Exit(3)
		}
		fmt.Fprintf(out, "%q\\n", roman.ToRoman(n))
	}
	if err := out.Flush(); err != nil {
		os.Exit(3)
	}
}
"""

DRIVER_MOD = """module dirtywork.local/driver

go 1.19

require example.com/roman v0.0.0

replace example.com/roman => /work
"""


def reference(n):
    if not 1 <= n <= 3999:
        return ""
    out = []
    for value, symbol in ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")):
        while n >= value:
            out.append(symbol)
            n -= value
    return "".join(out)


def build():
    """Build the driver against /work; return the program's path."""
    drv = tempfile.mkdtemp(prefix="driver-")
    for name, text in (("main.go", DRIVER), ("go.mod", DRIVER_MOD)):
        with open(os.path.join(drv, name), "w") as f:
            f.write(text)
    prog = os.path.join(drv, "driver")
    code, out, err = run([GO, "build", "-o", prog, "."], timeout=240, cwd=drv, env=GO_ENV)
    if code != 0:
        sys.exit(f"FAIL: the driver does not build against /work (exit {code}):\n"
                 f"{(out + err).decode(errors='replace')}")
    return prog


def main():
    harden()
    rng = random.Random(os.urandom(32))
    prog = build()
    numbers = [rng.choice([rng.randint(1, 3999), rng.randint(1, 3999), rng.randint(-50, 4100)])
               for _ in range(CASES)]
    stdin = "".join(f"{n}\n" for n in numbers).encode()
    code, out, err = run([prog], stdin)
    if code != 0:
        sys.exit(f"FAIL: the driver exited with {code}: {err.decode(errors='replace')}")
    lines = out.decode(errors="replace").splitlines()
    if len(lines) != len(numbers):
        sys.exit(f"FAIL: {len(lines)} answers for {len(numbers)} numbers")
    for n, line in zip(numbers, lines):
        want = '"' + reference(n) + '"'
        if line != want:
            sys.exit(f"FAIL: ToRoman({n}): want {want}, got {line[:200]}")
    print(f"ok: {len(numbers)} numbers")


if __name__ == "__main__":
    main()
