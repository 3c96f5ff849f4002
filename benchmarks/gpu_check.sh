#!/usr/bin/env bash
# The one device command of a session lent a GPU (issue 46 item 6): install seqpoint without the
# network, run the gpu-marked tests, stop with their result when they fail, then the paper-table
# rows of bench_gpu.py in what is left of BUDGET_S seconds (default 540, inside a 600 s call).
# Everything it writes goes to $OUT: gpu_tests.log, gpu_tests.xml, bench_gpu.json, RESULTS-rows.md,
# bench_gpu.log (at most 8 files come back; a cut-off run resumes as bench_gpu.py's docstring says).
#
# Preparation, here, in the repository root (the device image has no pydantic; the versions are
# the project venv's, `pip show pydantic pydantic-core annotated-types typing-inspection submitit`):
#
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
#       --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
#       -d .whl pydantic==2.14.4 pydantic-core==2.50.5 typing-extensions==4.16.0 \
#       annotated-types==0.8.0 typing-inspection==0.4.5 submitit==1.5.4
#
# The device call: run(command="bash benchmarks/gpu_check.sh", carry=[".whl"], timeout_s=600).
# The image has torch, transformers, accelerate, tokenizers, cloudpickle, rich, typer and pytest;
# it lacks `datasets`, so the gpu tests that need it skip (tests/integrations/test_hf_cuda.py does not).
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder for the results}"
BUDGET_S=${BUDGET_S:-540}
start=$SECONDS
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu_check: the .whl folder is missing or incomplete (see this script's header)"; exit 2; }
# src on the path too: an editable install needs setuptools >= 77, which build isolation would download
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 || echo "gpu_check: editable install failed; seqpoint from src/"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader
mapfile -t files < <(grep -rl --include='test_*.py' 'pytest.mark.gpu' tests | sort)
# four at a time (16 cores, 139 GiB: each test's memory checks are its own process's): about a third of
# the 200 s they took one at a time on 2026-11-28, left for the benchmark
timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider -n 4 --dist worksteal -rs --durations=0 --junitxml="$OUT/gpu_tests.xml" \
    "${files[@]}" 2>&1 | tee "$OUT/gpu_tests.log"
rc=${PIPESTATUS[0]}
summary=$(tail -n 1 "$OUT/gpu_tests.log")
if [ "$rc" -ne 0 ]; then
    echo "gpu_check: the gpu tests failed (exit $rc): no benchmark run"
    exit "$rc"
fi
# bench_gpu.py runs the gpu tests first unless its record holds their result: give it this one.
python3 -c 'import json, sys; json.dump({"rows": [], "not_run": {}, "gpu_tests": {"rc": 0, "summary": sys.argv[1]}}, open(sys.argv[2], "w"))' \
    "$summary" "$OUT/bench_gpu.json"
left=$((BUDGET_S - (SECONDS - start)))
if [ "$left" -lt 60 ]; then
    echo "gpu_check: ${left} s left after the tests: no benchmark run"
    exit 0
fi
python3 benchmarks/bench_gpu.py --budget-s "$left" --out "$OUT" 2>&1 | tee "$OUT/bench_gpu.log"
