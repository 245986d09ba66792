"""Acceptance check of fetch.py against a paged API serving data drawn now.

Run as `python3 -I -S /acceptance/check.py` in /work. The API is /acceptance/server.py, started
here as a background process on 127.0.0.1 and fed the data over a pipe; fetch.py runs only in a
child process (/usr/bin/python3 /work/fetch.py URL). The data come from os.urandom, so no total
can be known in advance.
"""
import ctypes
import json
import os
import random
import select
import string
import subprocess
import sys
import tempfile

PY = "/usr/bin/python3"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8"}
CASES = 20


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


def draw(rng):
    """Pages of one dataset, linked by random tokens; and the total of their values."""
    count = rng.randint(1, 9)
    tokens = ["1"] + ["".join(rng.choice(string.ascii_letters + string.digits) for _ in range(12))
                      for _ in range(count - 1)]
    pages, total = [], 0
    for i, token in enumerate(tokens):
        values = [rng.randint(-1000, 100000) for _ in range(rng.choice([0, rng.randint(1, 30)]))]
        total += sum(values)
        pages.append({"token": token, "next": tokens[i + 1] if i + 1 < count else None,
                      "items": [{"id": rng.getrandbits(40), "value": v} for v in values]})
    return pages, total


def start_server(datasets):
    """Start the API in its own session, fed datasets; return it and its port."""
    server = subprocess.Popen([PY, "-I", "-S", "-B", "/acceptance/server.py"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, cwd="/tmp", env=ENV, start_new_session=True)
    server.stdin.write(json.dumps(datasets).encode())
    server.stdin.close()
    ready, _, _ = select.select([server.stdout], [], [], 20)
    line = server.stdout.readline() if ready else b""
    if not line.strip().isdigit():
        server.kill()
        sys.exit("check: the API did not start")
    return server, int(line)


def main():
    harden()
    rng = random.Random(os.urandom(32))
    drawn = {f"set{rng.getrandbits(32):08x}{n}": draw(rng) for n in range(CASES)}
    server, port = start_server({name: pages for name, (pages, _) in drawn.items()})
    try:
        for name, (pages, total) in drawn.items():
            url = f"http://127.0.0.1:{port}/{name}/items"
            code, out, err = run([PY, "-S", "-E", "-s", "-B", "/work/fetch.py", url])
            want = f"{total}\n"
            if code != 0 or out.decode(errors="replace") != want:
                sizes = [len(p["items"]) for p in pages]
                sys.exit(f"FAIL: fetch.py on {len(pages)} pages of {sizes} items (exit {code}): "
                         f"want {want!r}, got {out[:200]!r} {err.decode(errors='replace')[-600:]}")
    finally:
        server.kill()
        server.wait()
    print(f"ok: {CASES} datasets")


if __name__ == "__main__":
    main()
