"""Fuzz every command with thousands of bad inputs and count what goes wrong (issue 13).

    python benchmarks/bench_fuzz.py [N_PER_COMMAND] [--quick]

Runs the CLI in-process (``seqpoint.cli.main``) on random bad files and flag values and
prints, per command: cases, clean exit 2, exit 0 (accepted), crashes (exit 1 or an
exception), tracebacks, multi-line errors and hangs (over 20 s). The same checks as
``tests/fuzz``, at a size for ``make bench``.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path

from _results import header, quick_mode, write_section
from seqpoint.cli import main

NUMS = [0, -1, 1, 3, 2**31, 2**62, 2**63, 2**64, 10**30, "1e400", "nan", "inf", "x", "", "1.5"]
HEADERS = ["length", "length,count", "tokens,count", "src,tgt,n", "a,b", "", "iteration,epoch"]
SCHED = b"iteration,epoch,batch_size,seq_len,tgt_len,tokens,padded_tokens,sum_sq_len\n"


def _csv(rng: random.Random) -> bytes:
    nl = rng.choice(["\n", "\r\n", "\r"])
    rows = [",".join(str(rng.choice(NUMS)) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(0, 5))]
    raw = nl.join([rng.choice(HEADERS), *rows]).encode()
    return rng.choice([raw, raw[: len(raw) // 2], b"\xff\xfe" + raw, raw + b"\x00", bytes(rng.randbytes(40))])


def _json(rng: random.Random) -> bytes:
    pt = {k: rng.choice(NUMS) for k in ("iteration", "batch_size", "seq_len", "tgt_len", "weight")}
    doc = rng.choice([{"points": [pt], "n_iterations": rng.choice(NUMS)}, {"measurements": ["x"]}, [], {}, pt])
    text = json.dumps(doc).encode()
    return rng.choice([text, text[:-1], b"[" * 5000, b"\x1f\x8b\x08junk"])


def case(command: str, rng: random.Random, tmp: Path) -> list[str]:
    def put(name: str, body: bytes) -> str:
        (tmp / name).write_bytes(body)
        return str(tmp / name)

    if command == "schedule":
        flag = rng.choice(["--batch-size", "--num-buckets", "--max-tokens", "--epochs", "--bins",
                           "--pad-to-multiple-of", "--max-seq-len", "--seed"])
        pol = {"--num-buckets": "bucket", "--max-tokens": "token_budget", "--max-seq-len": "packing"}.get(flag, "fixed")
        extra = ["--batch-size", "2"] if pol in ("bucket", "fixed") and flag != "--batch-size" else []
        src = put(rng.choice(["l.csv", "l.txt", "l.jsonl"]), _csv(rng))
        return ["schedule", src, "--policy", pol, *extra, flag, str(rng.choice(NUMS)), "-o", str(tmp / "s.csv")]
    if command == "select":
        sched = put("s.csv", SCHED + _csv(rng).split(b"\n", 1)[-1])
        return ["select", sched, "-k", str(rng.choice(NUMS)), "-o", str(tmp / "p.json")]
    if command == "project":
        sched = put("s.csv", SCHED + b"0,0,2,8,0,10,16,68\n")
        return ["project", sched, put("p.json", _json(rng)), put("m.json", _json(rng))]
    if command == "profile":
        # Bad SEQPOINTS files and bad settings fail before any step runs.
        bad_flag = rng.choice([["--repeats", str(rng.choice(NUMS))], ["--warmup", str(rng.choice(NUMS))],
                               ["--metric", rng.choice(["roofline:tpu", "x", "", "time,flops"])],
                               ["--set", f"workload.set.{rng.choice(['threads', 'dtype', 'nope', 'hidden'])}="
                                         f"{rng.choice(NUMS)}"],
                               ["-w", rng.choice(["json:loads", ":tiny", "bert:huge", "os:system", "x.py:f"])]])
        return ["profile", put("p.json", _json(rng)), "-w", "bert:tiny", *bad_flag, "--no-cache",
                "-q", "-o", str(tmp / "m.json")]
    if command in ("run", "validate"):
        section = rng.choice(["batching", "selection", "workload", "profile", "validation", "report", "lengths"])
        key = rng.choice(["epochs", "policy", "name", "params", "set", "metrics", "use_cache", "plots",
                          "runs", "n_points", "max_error", "source", "out", "bogus"])
        value = rng.choice(['"x"', "[]", "{}", "1.5", "-1", "1e400", "true", '"../../x"', '"a\u0000b"',
                            str(2**63), "[1]", '"false"', "nan"])
        body = rng.choice([f"[{section}]\n{key} = {value}\n", f"{key} = {value}\n", "[" * 3000,
                           f"name = {value}\n[{section}]\n"])
        raw = rng.choice([body.encode(), body.encode("utf-16"), b"\xff" + body.encode()])
        return [command, put("c.toml", raw), "-q"]
    return ["cache", "list", "--cache", put("c.sqlite", bytes(rng.randbytes(rng.randint(0, 200))))]


def _alarm(signum: int, frame: object) -> None:
    raise TimeoutError


def run(n: int) -> dict[str, Counter[str]]:
    rng = random.Random(13)
    tally: dict[str, Counter[str]] = {}
    signal.signal(signal.SIGALRM, _alarm)
    for command in ("schedule", "select", "project", "cache", "profile", "run", "validate"):
        counts: Counter[str] = Counter()
        for _ in range(n):
            with tempfile.TemporaryDirectory() as d:
                argv = case(command, rng, Path(d))
                out, err = io.StringIO(), io.StringIO()
                signal.alarm(20)
                try:
                    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                        try:
                            code = main(argv)
                        except SystemExit as exc:
                            code = exc.code if isinstance(exc.code, int) else 1
                except TimeoutError:
                    code = "hang"
                except BaseException:
                    code = "crash"
                finally:
                    signal.alarm(0)
                text = err.getvalue()
                counts["cases"] += 1
                counts[{0: "exit0", 2: "exit2", 1: "crash"}.get(code, str(code))] += 1  # type: ignore[call-overload]
                counts["traceback"] += "Traceback" in text + out.getvalue()
                errs = [ln for ln in text.splitlines() if ln.startswith("seqpoint: error")]
                counts["multi_line_error"] += code == 2 and len(errs) != 1
        tally[command] = counts
        print(command, dict(counts), flush=True)
    return tally


def _report(tally: dict[str, Counter[str]], n: int) -> str:
    cols = ("cases", "exit2", "exit0", "crash", "traceback", "multi_line_error", "hang")
    rows = ["| command | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for command, counts in tally.items():
        rows.append(f"| {command} | " + " | ".join(str(counts.get(c, 0)) for c in cols) + " |")
    total = sum(c["cases"] for c in tally.values())
    bad = sum(c.get("crash", 0) + c.get("traceback", 0) + c.get("hang", 0) for c in tally.values())
    return (
        header("Fuzzed bad input through the real CLI (issue 13)")
        + f"\n{n} generated cases per command (seed 13): bad CSV/JSON/text files (non-UTF-8, NUL, "
        "truncated, deeply nested, gzipped, CR-only line ends), out-of-range and unparsable "
        "flag values, corrupt caches. Expected: exit 2 with exactly one `seqpoint: error` line, "
        "or exit 0 when a generated input happens to be valid; never a crash, a traceback or a "
        "hang (20 s per case).\n\n"
        + "\n".join(rows)
        + f"\n\n{total} cases, {bad} crashes, tracebacks or hangs. The in-process fuzz test of "
        "`make test` (`tests/fuzz/`) checks the same properties on fewer cases.\n"
    )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--quick"]
    n = int(args[0]) if args else (40 if quick_mode() else 500)
    write_section("fuzz", _report(run(n), n))
