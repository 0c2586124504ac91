#!/bin/sh
# How close `mslink sim --estimate` comes on the scale cases of issue 32: 10^6 UDP flows,
# 10^5 TCP transfers, a 1 GB error trace and a 10^4-point sweep. Each case is estimated
# (--estimate --json), then run as a user would run it (tables, summary.json, stats.csv and
# plots) under GNU time; prints a Markdown table of estimate against measurement (wall time
# and peak RSS) and their ratios. Uses the calibration mslink finds (MSLINK_CALIBRATION, else
# ~/.cache/mslink/calibration.json; `mslink sim --calibrate` makes it), else the built-in
# figures. About 3 minutes and 4 GB of memory, 3 GB of disk in a temporary folder.
#   bench/estimate.sh [MSLINK]
set -eu
M=${1:-target/release/mslink}
case $M in /*) ;; *) M=$PWD/$M ;; esac
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

# The 1 GB trace: 004 Fig. 7's hop replaying a generated trace of 2 x 10^8 frames.
"$M" trace gen --loss 0.03 --corruption 0.1 --ber 1e-4 --frames 200000000 -o "$work/big.trace"
sed -e 's/^duration_s = 500/duration_s = 100/' \
    -e 's/^error = { model = "exponential", mean_bytes = 32768 }.*/error = { model = "trace", file = "big.trace" }/' \
    -e '/^\[sweep\]/,$d' scenarios/004/fig7_cbr_one_wlan.toml > "$work/trace_1g.toml"
# The 10^4-point sweep: 004 Fig. 7's hop for 10 s at 100 loss levels x 100 media rates.
{
  sed -e 's/^duration_s = 500/duration_s = 10/' -e 's/^drain_s = 10/drain_s = 1/' \
      -e '/^\[sweep\]/,$d' scenarios/004/fig7_cbr_one_wlan.toml
  echo '[sweep]'
  printf '"segment.1.error.mean_bytes" = [%s]\n' "$(seq -s ', ' 4096 500 53596)"
  printf '"flow.0.rate_bps" = [%s]\n' "$(seq -s ', ' 1000000 10000 1990000)"
} > "$work/sweep_10k.toml"

echo "| case | command | time estimated | time measured | ratio | memory estimated | peak RSS measured | ratio |"
echo "|---|---|---|---|---|---|---|---|"
row() {
  name=$1; shift
  est=$("$M" sim "$@" --estimate --json 2>/dev/null)
  /usr/bin/time -f '%e %M' -o "$work/time" "$M" sim "$@" --out "$work/out" --quiet 2>/dev/null
  rm -rf "$work/out"
  python3 - "$name" "$est" "$(cat "$work/time")" "$*" "$root" "$work" <<'EOF'
import json, sys
name, est, measured, args, root, work = sys.argv[1:]
e = json.loads(est)
wall, rss_kb = measured.split()
wall, rss = float(wall), int(rss_kb) * 1024
args = args.replace(root + "/", "").replace(work + "/", "")
print(f"| {name} | `mslink sim {args}` | {e['wall_s']:.1f} s | {wall:.1f} s | {e['wall_s'] / wall:.2f} "
      f"| {e['memory_bytes'] / 2**20:.0f} MiB | {rss / 2**20:.0f} MiB | {e['memory_bytes'] / rss:.2f} |")
EOF
}
row "10^6 UDP flows" "$root/scenarios/bench/cbr_1m_flows.toml" --jobs 1
row "10^5 TCP transfers" "$root/scenarios/bench/tcp_100k_flows.toml" --jobs 1
row "1 GB error trace" "$work/trace_1g.toml" --jobs 1
row "10^4-point sweep" "$work/sweep_10k.toml" --jobs 2
echo
echo "costs: $("$M" sim "$work/sweep_10k.toml" --estimate --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["costs"])')"
