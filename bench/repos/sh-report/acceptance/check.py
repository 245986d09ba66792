"""Acceptance check of report.sh on files drawn now.

Run as `python3 -I -S /acceptance/check.py` in /work. report.sh runs only in a child process
(/bin/bash /work/report.sh FILE); the files it reads come from os.urandom, so no output can be
known in advance.
"""
import ctypes
import os
import random
import subprocess
import sys
import tempfile

BASH = "/bin/bash"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
CASES = 20
NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_.-"


def harden():
    """Make this process non-dumpable: a child of the same user can no longer read its memory
    or open its files through /proc, nor attach to it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE, 0
        sys.exit("check: cannot make the checker non-dumpable")


def run(argv, stdin=b"", timeout=30):
    """Run argv in /work with a clean environment; output goes to files, so a grandchild that
    keeps a pipe open cannot hang the check. Returns (exit code, stdout, stderr), code None
    when it timed out."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err, cwd="/work",
                             env=ENV, start_new_session=True)
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


def reference(pairs):
    totals = {}
    for name, size in pairs:
        totals[name] = totals.get(name, 0) + size
    lines = [f"{name}\t{totals[name]}" for name in sorted(totals)]
    lines.append(f"TOTAL\t{sum(totals.values())}")
    return "".join(line + "\n" for line in lines)


def draw(rng):
    names = ["".join(rng.choice(NAME_CHARS[:36] if i == 0 else NAME_CHARS)
                     for i in range(rng.randint(1, 10))) for _ in range(rng.randint(1, 12))]
    return [(rng.choice(names), rng.randint(0, 10**6)) for _ in range(rng.randint(0, 60))]


def main():
    harden()
    rng = random.Random(os.urandom(32))
    work = tempfile.mkdtemp(prefix="check-")
    for n in range(CASES):
        pairs = draw(rng) if n else []
        path = os.path.join(work, f"sizes-{n}.txt")
        with open(path, "w") as f:
            f.write("".join(f"{name} {size}\n" for name, size in pairs))
        code, out, err = run([BASH, "/work/report.sh", path])
        want = reference(pairs)
        got = out.decode(errors="replace")
        if code != 0:
            sys.exit(f"FAIL: report.sh exited with {code} on {pairs[:8]}: {err.decode(errors='replace')}")
        if got != want:
            sys.exit(f"FAIL: report.sh on {pairs[:8]}{' …' if len(pairs) > 8 else ''}:\n"
                     f"want:\n{want[:600]}got:\n{got[:600]}")
    print(f"ok: {CASES} files")


if __name__ == "__main__":
    main()
