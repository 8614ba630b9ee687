#!/usr/bin/env bash
# Cold start (issue 29 item 4): import, --help, and the first Monte Carlo `exact` point of each
# decoder family, each on an empty NUMBA_CACHE_DIR, with wall and CPU time (user + sys).
# Usage: .ci/cold_start.sh [TREE] [FAMILY...]   (TREE defaults to this checkout; run from anywhere)
# Families: random topk llada fast-dllm eb remdm (default: all); "import" and "help" time those only.
set -uo pipefail
TREE=$(cd "${1:-$(dirname "$0")/..}" && pwd); shift || true
PY=${PY:-/work/main/.venv/bin/python}
FAMILIES=("${@:-import help random topk llada fast-dllm eb remdm}")
read -ra FAMILIES <<< "${FAMILIES[*]}"
cd "$TREE" || exit 1
export PYTHONPATH=$TREE
POINT=(-m validation.cli exact --language 2gram -L 64 -N 16 --method mc --samples 20 --seed 0)
t() { /usr/bin/time -f "%e s wall %U s user %S s sys  $1" "${@:2}" >/dev/null 2>/tmp/cold_start.$$ ; tail -1 /tmp/cold_start.$$; }
echo "tree $(git -C "$TREE" rev-parse --short HEAD)  load $(cut -d' ' -f1-3 /proc/loadavg)"
for f in "${FAMILIES[@]}"; do
  cache=$(mktemp -d); export NUMBA_CACHE_DIR=$cache
  case $f in
    import) t "import numerics (warm pyc)" "$PY" -c "import numerics" ;;
    help) t "mdm-theory --help" "$PY" -m validation.cli --help; t "mdm-theory --version" "$PY" -m validation.cli --version ;;
    random) t "exact random (cold)" "$PY" "${POINT[@]}" ;;
    topk) t "exact topk (cold)" "$PY" "${POINT[@]}" --sampler topk ;;
    llada) t "exact llada (cold)" "$PY" "${POINT[@]}" --sampler llada ;;
    fast-dllm) t "exact fast-dllm (cold)" "$PY" "${POINT[@]}" --sampler fast-dllm --threshold 0.9 ;;
    eb) t "exact eb (cold)" "$PY" "${POINT[@]}" --sampler eb --gamma 1 ;;
    remdm) t "exact remdm (cold)" "$PY" "${POINT[@]}" --sampler remdm --eta 0.5 ;;
    *) echo "unknown family $f" ;;
  esac
  rm -rf "$cache"
done
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
