#!/usr/bin/env bash
# On the 16-core benchmark machine, after ../shared/device/prepare.sh built .devbundle here
# (uvloop's wheel added to .devbundle/whl): build jetwire in place, then run
#   0. benchmarks/raw_threads.py for RAWT rounds (at VSCALE) when set;
#   1. benchmarks/compare.py, the rows ROWS0 (all), free (ROUNDS0 rounds, default 1; CLIENTS0
#      clients; SCALE0), then with the clients on the CPUs PINC only when set;
#   2. the rows VROWS for jetwire's two flavours once per variant in VARIANTS: each is a
#      space-separated list of environment settings (the knobs:
#      JETWIRE_BENCH_POLL_IO=on|off; VROWS=... picks that variant's
#      rows), "-" for none;
#   3. benchmarks/thread_stats.py for the rows in TSROWS (blocking flavour, SCALE_TS);
#   4. benchmarks/thread_stats.py for each row:client in SPY (e.g. "f:jetwire f:jetwire.aio";
#      scale SCALE_SPY, 1) with py-spy (its wheel added to .devbundle/whl) sampling the row
#      (SPY_RATE a second, 1000; SPY_MODE "--nonblocking" (Python frames only, the process
#      never paused) or "--native"; idle threads too); the collapsed stacks land in $OUT/spy.tgz.
#   5. an A/B of this build against .devbundle/base (another checkout's source, built there
#      too; make it with `git archive <commit> | tar -x -C .devbundle/base`): ABROUNDS
#      rounds (3) of the rows ABROWS for ABCLIENTS (jetwire,jetwire.aio), this build and
#      the base in turns, scale ABSCALE (0.5); the JSON of each lands in $OUT/ab.tgz.
# Variants (2.) may set VROWS, VCLIENTS (jetwire,jetwire.aio) and VROUNDS (1) themselves.
# Everything lands in $OUT; the per-round lines are printed as they come.
export PYTHONUNBUFFERED=1
B=$(cd "$(dirname "$0")/../.devbundle" && pwd); OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"; SITE=$(mktemp -d)
cd "$B/.." || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$B"/whl/*.whl 2>&1 | grep -v WARNING
export PATH=$SITE/bin:$B/fakebin:$PATH
PYTHONPATH=$SITE python3 setup.py -q build_ext --inplace -j 16 > "$OUT/build.log" 2>&1
export PYTHONPATH=$PWD/src:$SITE XDG_CACHE_HOME=$B/cache JETWIRE_GOPATH=$B/gopath JETWIRE_BENCH_PEERS=$PWD/benchmarks
python3 -c "import jetwire, sys; sys.exit(0 if jetwire.speedups_enabled() else 1)" || { echo "compiled speedups did not build"; tail -20 "$OUT/build.log"; exit 1; }
python3 -c "import uvloop" && echo "uvloop ok"
echo "nproc=$(nproc) $(python3 --version) $(grep -m1 'model name' /proc/cpuinfo)"
for s in /sys/devices/system/cpu/cpu0/cpuidle/state*; do
  [ -d "$s" ] && echo "cpuidle $(cat "$s/name") latency=$(cat "$s/latency")us disable=$(cat "$s/disable")"
done
cat /sys/devices/system/cpu/cpufreq/policy0/scaling_governor 2>/dev/null
lscpu 2>/dev/null | grep -E "^(Thread|Core|Socket|NUMA node\(s\))"
if [ -n "${RAWT:-}" ]; then  # row s with threads and no client logic: RAWT rounds
  echo "== raw_threads"
  timeout 120 python3 benchmarks/raw_threads.py "$RAWT" "${VSCALE:-0.5}" 2>&1 | tail -n $((RAWT + 1))
fi
rows() {  # name, then compare.py arguments
  local name=$1; shift
  echo "== $name"
  timeout "${T:-300}" python3 benchmarks/compare.py "$@" --json > "$OUT/$name.json" 2> "$OUT/$name.err"
  echo "rc=$?"
  grep -E '^round' "$OUT/$name.err"
}
if [ "${ROUNDS0:-1}" != 0 ]; then
  rows base --rows "${ROWS0:-all}" --rounds "${ROUNDS0:-1}" --scale "${SCALE0:-1}" --clients "${CLIENTS0:-jetwire,jetwire.aio,nats.go,raw}"
fi
if [ -n "${PINC:-}" ]; then  # the clients on these CPUs only, the server free
  rows pinned --rows "${VROWS:-b,c,h,s,f2}" --rounds 1 --scale "${VSCALE:-0.5}" --client-cpus "$PINC" --clients jetwire,jetwire.aio,nats.go
fi
IFS=';' read -r -a variants <<< "${VARIANTS:-}"
i=0
for v in "${variants[@]}"; do
  i=$((i + 1))
  [ "$v" = "-" ] && v=""
  echo "variant $i: $v"
  env $v bash -c "$(declare -f rows); OUT=$OUT rows v$i --rows \${VROWS:-b,c,h,s,f2} --rounds \${VROUNDS:-1} --scale ${VSCALE:-0.5} --clients \${VCLIENTS:-jetwire,jetwire.aio}"
done
for r in ${TSROWS:-}; do
  echo "== thread_stats $r"
  timeout 120 python3 benchmarks/thread_stats.py "$r" jetwire "${SCALE_TS:-0.5}" 2>&1 | tail -12
done
if [ -n "${ABROWS:-}" ] && [ -d "$B/base/src" ]; then
  (cd "$B/base" && PYTHONPATH=$SITE python3 setup.py -q build_ext --inplace -j 16 > "$OUT/build_base.log" 2>&1)
  mkdir -p "$OUT/ab"
  for k in $(seq "${ABROUNDS:-3}"); do
    for side in new base; do
      src=$PWD/src; [ "$side" = base ] && src=$B/base/src
      echo "== ab round $k: $side"
      PYTHONPATH=$src:$SITE timeout 300 python3 benchmarks/compare.py --rows "$ABROWS" --rounds 1 --scale "${ABSCALE:-0.5}" \
        --clients "${ABCLIENTS:-jetwire,jetwire.aio}" --json > "$OUT/ab/$side-$k.json" 2> "$OUT/ab/$side-$k.err"
      grep -E '^round' "$OUT/ab/$side-$k.err"
    done
  done
  tar -C "$OUT" -czf "$OUT/ab.tgz" ab && rm -rf "$OUT/ab"
fi
if [ -n "${SPY:-}" ]; then
  mkdir -p "$OUT/spy"
  for rc in $SPY; do
    r=${rc%%:*}; c=${rc#*:}
    echo "== py-spy $r $c"
    THREAD_STATS_SPY="$OUT/spy/$r-$c.txt" THREAD_STATS_SPY_RATE="${SPY_RATE:-1000}" THREAD_STATS_SPY_MODE="${SPY_MODE:---nonblocking}" timeout 120 \
      python3 benchmarks/thread_stats.py "$r" "$c" "${SCALE_SPY:-1}" 2>&1 | grep -vE "^py-spy> (Stopped|You can)" | tail -12
  done
  tar -C "$OUT" -czf "$OUT/spy.tgz" spy && rm -rf "$OUT/spy"
fi
