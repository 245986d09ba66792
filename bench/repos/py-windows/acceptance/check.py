"""Acceptance check of windows.windows on inputs drawn now.

Run as `python3 -I -S /acceptance/check.py` in /work. The subject's code runs only in a child
process (this file with --drive, which imports /work/windows.py there); this process imports
nothing from /work. The cases come from os.urandom, so no answer can be known in advance.
"""
import ctypes
import json
import os
import random
import subprocess
import sys
import tempfile

PY = "/usr/bin/python3"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
CASES = 300


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


def reference(items, k):
    if k < 1:
        return {"error": "ValueError"}
    return {"ok": [items[i:i + k] for i in range(len(items) - k + 1)]}


def drive():
    """The child: read cases, call the subject, write one JSON answer a line."""
    sys.path.insert(0, "/work")
    from windows import windows  # noqa: the subject, in this child only

    answers = []
    for line in sys.stdin:
        case = json.loads(line)
        try:
            answers.append({"ok": [list(w) for w in windows(case["items"], case["k"])]})
        except Exception as e:  # the type is the answer
            answers.append({"error": type(e).__name__})
    sys.stdout.write("".join(json.dumps(a) + "\n" for a in answers))


def main():
    harden()
    rng = random.Random(os.urandom(32))
    cases = []
    for _ in range(CASES):
        items = [rng.randint(-99, 99) for _ in range(rng.randint(0, 12))]
        cases.append({"items": items, "k": rng.randint(-1, len(items) + 2)})
    stdin = "".join(json.dumps(c) + "\n" for c in cases).encode()
    code, out, err = run([PY, "-S", "-E", "-s", "-B", "/acceptance/check.py", "--drive"], stdin)
    if code != 0:
        sys.exit(f"FAIL: the subject exited with {code}: {err.decode(errors='replace')}")
    lines = out.decode(errors="replace").splitlines()
    if len(lines) != len(cases):
        sys.exit(f"FAIL: {len(lines)} answers for {len(cases)} cases")
    for case, line in zip(cases, lines):
        want = reference(case["items"], case["k"])
        try:
            got = json.loads(line)
        except ValueError:
            got = line
        if got != want:
            sys.exit(f"FAIL: windows({case['items']}, {case['k']}): want {want}, got {got}")
    print(f"ok: {len(cases)} cases")


if __name__ == "__main__":
    if sys.argv[1:] == ["--drive"]:
        drive()
    else:
        main()
