"""Acceptance check of tally.js and its --top flag on files drawn now.

Run as `python3 -I -S /acceptance/check.py` in /work. tally.js runs only in a child process
(/usr/bin/node /work/tally.js …, no module lookup of this checker's own); the files it reads come
from os.urandom, so no output can be known in advance.
"""
import ctypes
import os
import random
import re
import subprocess
import sys
import tempfile

NODE = "/usr/bin/node"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
CASES = 8


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


def reference(text, top=None):
    counts = {}
    for word in re.findall(r"[a-z]+", text.lower()):
        counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if top is not None:
        ranked = ranked[:top]
    return "".join(f"{n} {word}\n" for word, n in ranked)


def draw(rng):
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 7)))
             for _ in range(rng.randint(1, 25))]
    weights = [rng.randint(1, 9) for _ in vocab]
    out = []
    for _ in range(rng.randint(0, 200)):
        word = rng.choices(vocab, weights)[0]
        if rng.random() < 0.2:
            word = word.capitalize() if rng.random() < 0.5 else word.upper()
        out.append(word + rng.choice([" ", " ", " ", ", ", ". ", "\n", "! ", " - ", "'s ", "3 "]))
    return "".join(out)


def main():
    harden()
    rng = random.Random(os.urandom(32))
    work = tempfile.mkdtemp(prefix="check-")
    for n in range(CASES):
        text = draw(rng)
        path = os.path.join(work, f"words-{n}.txt")
        with open(path, "w") as f:
            f.write(text)
        distinct = len(set(re.findall(r"[a-z]+", text.lower())))
        top = rng.randint(1, distinct + 3)
        for args, want in (
            ([path], reference(text)),
            (["--top", str(top), path], reference(text, top)),
            ([path, "--top", str(top)], reference(text, top)),
        ):
            code, out, err = run([NODE, "/work/tally.js", *args])
            got = out.decode(errors="replace")
            if code != 0 or got != want:
                sys.exit(f"FAIL: node tally.js {' '.join(args)} (exit {code}) on {text[:300]!r}:\n"
                         f"want:\n{want[:500]}got:\n{got[:500]}{err.decode(errors='replace')}")
    bad = [["--top", "0", path], ["--top", "-" + str(rng.randint(1, 9)), path], [path, "--top"],
           ["--top", "x" + str(rng.randint(1, 9)), path], [path, "--top", f"{rng.randint(1, 9)}.5"]]
    for args in bad:
        code, out, err = run([NODE, "/work/tally.js", *args])
        if code != 2 or out:
            sys.exit(f"FAIL: node tally.js {' '.join(args)}: want exit 2 and no output, "
                     f"got exit {code} and {out[:200]!r}")
        if not err:
            sys.exit(f"FAIL: node tally.js {' '.join(args)}: want a message on stderr")
    print(f"ok: {CASES * 3 + len(bad)} runs")


if __name__ == "__main__":
    main()
