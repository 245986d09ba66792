"""Acceptance check of the rename of calc_total to order_total, on orders drawn now.

Run as `python3 -I -S /acceptance/check.py` in /work. No file of the tree outside acceptance/ may
still say calc_total; the subject's code runs only in child processes (this file with --drive,
which imports the shop package from /work there, and /work/report.py); the orders come from
os.urandom, so no answer can be known in advance.
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
OLD, NEW = "calc_total", "order_total"
CASES = 200


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


def reference(lines, discount_pct):
    if not 0 <= discount_pct <= 100:
        return {"error": "ValueError"}
    return {"ok": sum(u * q for u, q in lines) * (100 - discount_pct) // 100}


def old_name_left():
    """The first file outside acceptance/ and bench.json (which states the task) and compiled
    caches that still names OLD."""
    for top, dirs, files in os.walk("/work"):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__")
                         and not (top == "/work" and d == "acceptance"))
        for name in sorted(files):
            path = os.path.join(top, name)
            if (name.endswith(".pyc") or path == "/work/bench.json" or not os.path.isfile(path)
                    or os.path.islink(path)):
                continue
            with open(path, "rb") as f:
                if OLD.encode() in f.read(8 << 20):
                    return path
    return None


def drive():
    """The child: check the names, then price each case through order_total and a Cart."""
    sys.path.insert(0, "/work")
    import shop.cart  # noqa: the subject, in this child only
    import shop.pricing  # noqa

    names = {"pricing_has_new": hasattr(shop.pricing, NEW),
             "pricing_has_old": hasattr(shop.pricing, OLD),
             "cart_has_old": hasattr(shop.cart, OLD)}
    answers = [names]
    for line in sys.stdin:
        case = json.loads(line)
        lines = [tuple(x) for x in case["lines"]]
        for price in (lambda: getattr(shop.pricing, NEW)(lines, case["discount_pct"]),
                      lambda: cart_total(shop.cart.Cart, lines, case["discount_pct"])):
            try:
                answers.append({"ok": price()})
            except Exception as e:  # the type is the answer
                answers.append({"error": type(e).__name__})
    sys.stdout.write("".join(json.dumps(a) + "\n" for a in answers))


def cart_total(cart_type, lines, discount_pct):
    cart = cart_type()
    for unit, qty in lines:
        cart.add(unit, qty)
    return cart.total(discount_pct)


def main():
    harden()
    left = old_name_left()
    if left:
        sys.exit(f"FAIL: {left} still names {OLD}")
    rng = random.Random(os.urandom(32))
    cases = [{"lines": [[rng.randint(0, 99999), rng.randint(0, 20)] for _ in range(rng.randint(0, 8))],
              "discount_pct": rng.choice([0, 100, -1, 101, rng.randint(0, 100), rng.randint(0, 100)])}
             for _ in range(CASES)]
    stdin = "".join(json.dumps(c) + "\n" for c in cases).encode()
    code, out, err = run([PY, "-S", "-E", "-s", "-B", "/acceptance/check.py", "--drive"], stdin)
    if code != 0:
        sys.exit(f"FAIL: the subject exited with {code}: {err.decode(errors='replace')}")
    answers = []
    for line in out.decode(errors="replace").splitlines():
        try:
            answers.append(json.loads(line))
        except ValueError:
            answers.append(line)
    want_names = {"pricing_has_new": True, "pricing_has_old": False, "cart_has_old": False}
    if not answers or answers[0] != want_names:
        sys.exit(f"FAIL: names: want {want_names}, got {answers[:1]}")
    if len(answers) != 1 + 2 * len(cases):
        sys.exit(f"FAIL: {len(answers) - 1} answers for {2 * len(cases)} questions")
    for i, case in enumerate(cases):
        want = reference(case["lines"], case["discount_pct"])
        for how, got in zip((f"{NEW}", "Cart.total"), answers[1 + 2 * i:3 + 2 * i]):
            if got != want:
                sys.exit(f"FAIL: {how} of {case}: want {want}, got {got}")
    work = tempfile.mkdtemp(prefix="check-")
    for n, case in enumerate(c for c in cases[:20] if 0 <= c["discount_pct"] <= 100):
        path = os.path.join(work, f"order-{n}.json")
        with open(path, "w") as f:
            json.dump({"lines": [{"unit_cents": u, "quantity": q} for u, q in case["lines"]],
                       "discount_pct": case["discount_pct"]}, f)
        code, out, err = run([PY, "-S", "-E", "-s", "-B", "/work/report.py", path])
        want = f"total: {reference(case['lines'], case['discount_pct'])['ok']}\n"
        if code != 0 or out.decode(errors="replace") != want:
            sys.exit(f"FAIL: report.py on {case} (exit {code}): want {want!r}, got {out[:200]!r} "
                     f"{err.decode(errors='replace')}")
    print(f"ok: {CASES} orders")


if __name__ == "__main__":
    if sys.argv[1:] == ["--drive"]:
        drive()
    else:
        main()
