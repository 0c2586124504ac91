#!/usr/bin/env bash
# Long soak of the real-time drivers (issue 16): the emulator's soak test
# (crates/cli/tests/emulate_soak.rs: TCP and UDP, loss off and on) and the tunnel's
# (crates/tunnel/tests/soak.rs), SECS seconds per case instead of the short default that
# `./dev test` runs. Each asserts that RSS stays flat within its stated bound, that every packet
# is accounted for and that TCP never stalls, and prints one summary line per case (the
# emulator's are the figures of docs/emulator.md, "Soak"). Needs root; the emulator's four cases
# take about 4 x SECS, one after the other. Run it from anywhere in the repository, alone on the
# machine (holding the build lock, as the other benchmarks do):
#   flock /tmp/mslink-build.lock bench/soak.sh [SECS]     whole seconds, default 600 (10 min)
#   bench/soak.sh 60 2>&1 | tee soak.log
# Exits non-zero if either test fails (both run regardless).
set -euo pipefail
if [ $# -gt 1 ] || ! [[ ${1:-600} =~ ^[1-9][0-9]*$ ]]; then
  sed -n 2,12p "$0"
  exit 2
fi
SECS=${1:-600}
cd "$(dirname "$0")/.."
export MSLINK_SOAK_SECS=$SECS MSLINK_REQUIRE_ROOT=1
echo "== soak, $SECS s per case: $(git rev-parse --short HEAD), $(date -u +%F), Linux $(uname -r)," \
  "$(nproc) CPUs ($(sed -n 's/^model name\t*: //p' /proc/cpuinfo | head -1))"
status=0
echo "== emulator (mslink emulate)"
cargo test --release -p mslink-cli --test emulate_soak -- --nocapture || status=1
echo "== tunnel (mslink tunnel)"
cargo test --release -p mslink-tunnel --test soak -- --nocapture || status=1
exit $status
