#!/bin/sh
# Before/after figures of two mslink builds, interleaved in one run so both meet the same
# machine state: simulator events per CPU-second (scenarios/bench/cbr_1000_flows.toml),
# emulator TCP throughput at MTU 1500 (iperf3, CUBIC, 8 s), and tunnel throughput (raw and
# selective repeat, crates/tunnel/scripts/bench_iperf.sh). Needs root and iperf3.
#   bench/ab.sh OLD_MSLINK NEW_MSLINK [REPS]
# e.g. a build of an earlier commit:
#   git worktree add /tmp/base COMMIT && (cd /tmp/base && cargo build --release -p mslink-cli)
#   bench/ab.sh /tmp/base/target/release/mslink target/release/mslink
set -eu
[ $# -ge 2 ] || { sed -n 2,9p "$0"; exit 2; }
OLD=$1; NEW=$2; REPS=${3:-3}
cd "$(dirname "$0")/.."
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
for r in $(seq "$REPS"); do
  for b in OLD NEW; do
    eval M=\$$b
    "$M" sim scenarios/bench/cbr_1000_flows.toml --out "$out/$b" --jobs 1 --quiet
    python3 -c "import json;d=json.load(open('$out/$b/timing.json'));print('sim $b', round(d['events_per_s']/1e6,2), 'M events/CPU-s')"
  done
done
for r in $(seq "$REPS"); do
  for b in OLD NEW; do
    eval M=\$$b
    printf 'emulate %s, MTU 1500: ' $b
    "$M" emulate --pair --quiet --left 'iperf3 -s -1 >/dev/null' \
      --right 'sleep 0.5; iperf3 -C cubic -c $MSLINK_LEFT -t 8 | grep receiver' | awk '{print $7, $8}'
  done
done
for b in OLD NEW; do
  eval M=\$$b
  echo "tunnel $b:"
  crates/tunnel/scripts/bench_iperf.sh "$M" 10 2>&1 | grep -E "tunnel, raw|tunnel, selective"
done
