"""Acceptance check of tally.py on item trees drawn now.

Run as `python3 -I -S /acceptance/check.py` in /work. tally.py runs only in a child process
(/usr/bin/python3 /work/tally.py DIR); the trees it reads are made in /tmp from os.urandom, so no
total can be known in advance (the inventory/ the worker saw is never used).
"""
import ctypes
import os
import random
import subprocess
import sys
import tempfile

PY = "/usr/bin/python3"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
CASES = 25


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


def draw(rng, root):
    """Make a tree of item files (and decoys) under root; return the total weight."""
    total = 0
    dirs = [root]
    for _ in range(rng.randint(0, 12)):
        parent = rng.choice(dirs)
        if parent.count(os.sep) - root.count(os.sep) < 5:
            d = os.path.join(parent, f"d{len(dirs)}-{rng.randint(0, 999)}")
            os.mkdir(d)
            dirs.append(d)
    for n in range(rng.randint(0, 60)):
        d = rng.choice(dirs)
        weight = rng.randint(0, 5000)
        kind = rng.random()
        if kind < 0.8:
            name, total = f"item-{n}.item", total + weight
        elif kind < 0.9:
            name = f"notes-{n}.txt"
        else:
            name = f"item-{n}.item.old"
        lines = [f"name: thing-{rng.randint(0, 10**6)}", f"weight: {weight}", f"sku: {rng.getrandbits(32):08x}"]
        rng.shuffle(lines)
        with open(os.path.join(d, name), "w") as f:
            f.write("\n".join(lines) + "\n")
    return total


def main():
    harden()
    rng = random.Random(os.urandom(32))
    work = tempfile.mkdtemp(prefix="check-")
    for n in range(CASES):
        root = os.path.join(work, f"inventory-{n}")
        os.mkdir(root)
        want = f"{draw(rng, root)}\n"
        code, out, err = run([PY, "-S", "-E", "-s", "-B", "/work/tally.py", root])
        if code != 0 or out.decode(errors="replace") != want:
            tree = sorted(os.path.relpath(os.path.join(t, f), root) for t, _, fs in os.walk(root) for f in fs)
            sys.exit(f"FAIL: tally.py on a tree of {len(tree)} files {tree[:12]} (exit {code}): "
                     f"want {want!r}, got {out[:200]!r} {err.decode(errors='replace')}")
    print(f"ok: {CASES} trees")


if __name__ == "__main__":
    main()
