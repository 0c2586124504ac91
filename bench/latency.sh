#!/bin/sh
# One-way latency the emulator adds, side by side with Mahimahi's mm-delay (issue 17).
# One UDP ping-pong (bench/latency.c, compiled here with cc: 64-byte messages, one in flight)
# runs from a command in a network namespace to an echo server on the host, three ways, in
# interleaved repetitions (the order rotates each repetition):
#   direct    no emulator: the namespace joined to the host by a veth pair (198.18.0.0/30,
#             the benchmarking range of RFC 2544)
#   mahimahi  mm-delay 0 (TUN devices, one process per direction), client to $MAHIMAHI_BASE
#   mslink    mslink emulate, single mode, delay 0, unlimited rate, client to $MSLINK_RIGHT
# and prints p50/p90/p99 of the round trip over all repetitions, the range of the per-run
# p50s, and the added one-way latency at p50: (p50 RTT - direct p50 RTT) / 2.
# Needs root, cc, python3, and Mahimahi's mm-delay on PATH, installed setuid root (Mahimahi
# refuses to run as root: it is run as user nobody through setpriv). Mahimahi needs
# net.ipv4.ip_forward=1: the script sets it for the run and restores it at exit.
#   bench/latency.sh [MSLINK [REPS [COUNT]]]      defaults: target/release/mslink 5 20000
# With BASELINE=/path/to/another/mslink, the second case is that build instead of Mahimahi
# (a before/after of the emulator's loop; mm-delay is then not needed).
# Environment: SIZE (UDP payload bytes, 64), WARMUP (untimed round trips per run, 1000),
#   GAP_US (sleep between round trips, 0: back to back; e.g. 1000 for a lightly loaded path,
#   where every packet finds the emulator asleep),
#   MSLINK_ARGS (extra flags for the mslink run, e.g. '--set busy_poll_us=0': the loop that
#   sleeps after every packet, without the default 30 us of busy polling),
#   PIN (a CPU list, e.g. 0: the server, the client and the emulator of every case all run
#   there, through taskset; default: no pinning, the scheduler places them).
set -eu
cd "$(dirname "$0")/.."
M=${1:-target/release/mslink}; REPS=${2:-5}; COUNT=${3:-20000}
SIZE=${SIZE:-64}; WARMUP=${WARMUP:-1000}; GAP_US=${GAP_US:-0}; MSLINK_ARGS=${MSLINK_ARGS:-}; PIN=${PIN:-}
die() { echo "bench/latency.sh: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (namespaces, TUN devices)"
[ -x "$M" ] || die "no mslink binary at $M (cargo build --release -p mslink-cli, or pass its path)"
BASELINE=${BASELINE:-}
if [ -n "$BASELINE" ]; then
  [ -x "$BASELINE" ] || die "BASELINE=$BASELINE is not an executable"
  other=baseline
else
  MM=$(command -v mm-delay) || die "mm-delay (Mahimahi) is not on PATH: build Mahimahi and install mm-delay setuid root (docs/PERFORMANCE.md, 'Emulator latency against Mahimahi'), or compare with BASELINE=another-mslink"
  [ -u "$MM" ] || die "$MM is not setuid root (chown root $MM && chmod u+s $MM)"
  other=mahimahi
fi
command -v cc >/dev/null || die "needs a C compiler (cc)"
command -v python3 >/dev/null || die "needs python3"
[ -x /usr/bin/time ] || die "needs /usr/bin/time (apt-get install time)"

tmp=$(mktemp -d)
chmod 755 "$tmp"    # the Mahimahi client runs as nobody
fwd=$(sysctl -n net.ipv4.ip_forward)
server=
ns=mslat$$
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  sysctl -qw net.ipv4.ip_forward="$fwd"
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cc -O2 -o "$tmp/latency" bench/latency.c
sysctl -qw net.ipv4.ip_forward=1
ip netns add "$ns"
ip link add "${ns}h" type veth peer name "${ns}n" netns "$ns"
ip addr add 198.18.0.1/30 dev "${ns}h"
ip link set "${ns}h" up
ip -n "$ns" addr add 198.18.0.2/30 dev "${ns}n"
ip -n "$ns" link set "${ns}n" up
ip -n "$ns" link set lo up

pin=
[ -z "$PIN" ] || pin="taskset -c $PIN"
$pin "$tmp/latency" server > "$tmp/port" &
server=$!
for _ in $(seq 50); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")
[ -n "$port" ] || die "the echo server did not start"
client="$tmp/latency client"
args="$port $COUNT $SIZE $WARMUP $GAP_US"

timed() { # $1 = case, then a command: its CPU seconds (user + system, with the processes
           # it waited for) and wall seconds, appended to cpu.CASE
  f="$tmp/cpu.$1"; shift
  /usr/bin/time -a -o "$f" -f '%U %S %e' "$@"
}

run() { # $1 = case, $2 = repetition
  out="$tmp/$1.$2"
  case $1 in
    direct) timed $1 $pin ip netns exec "$ns" $client 198.18.0.1 $args > "$out" ;;
    mahimahi) timed $1 $pin setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$MM" 0 sh -c "$client \$MAHIMAHI_BASE $args" > "$out" ;;
    # shellcheck disable=SC2086
    baseline) timed $1 $pin "$BASELINE" emulate --quiet --set delay_ms=0 --set rate_bps=0 $MSLINK_ARGS \
        -- sh -c "$client \$MSLINK_RIGHT $args" > "$out" ;;
    # shellcheck disable=SC2086
    mslink) timed $1 $pin "$M" emulate --quiet --set delay_ms=0 --set rate_bps=0 $MSLINK_ARGS \
        -- sh -c "$client \$MSLINK_RIGHT $args" > "$out" ;;
  esac
  [ "$(wc -l < "$out")" -gt 0 ] || die "$1 run $2 measured nothing"
}

echo "bench/latency.sh: $REPS repetitions x $COUNT round trips of $SIZE-byte UDP ($WARMUP untimed first, ${GAP_US} us apart), $(nproc) CPUs, $(uname -r), ${pin:-no pinning}"
set -- direct "$other" mslink
for r in $(seq "$REPS"); do
  for c in "$@"; do run "$c" "$r"; done
  first=$1; shift; set -- "$@" "$first"   # rotate the order
done

python3 - "$tmp" "$REPS" "$other" <<'EOF'
import sys
tmp, reps, other = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def q(xs, p):
    return xs[min(len(xs) - 1, int(p * len(xs)))]
rows, direct = [], None
for case in ("direct", other, "mslink"):
    pooled, p50s = [], []
    for r in range(1, reps + 1):
        xs = sorted(int(l) / 1000 for l in open(f"{tmp}/{case}.{r}"))
        pooled += xs
        p50s.append(q(xs, 0.5))
    pooled.sort()
    p = {k: q(pooled, k / 100) for k in (50, 90, 99)}
    if case == "direct":
        direct = p[50]
    cpu = [tuple(map(float, l.split())) for l in open(f"{tmp}/cpu.{case}") if l[0].isdigit()]
    busy = 100 * sum(u + s for u, s, _ in cpu) / max(0.01, sum(e for _, _, e in cpu))
    rows.append((case, len(pooled), p, min(p50s), max(p50s), busy))
print(f"{'case':<9} {'samples':>8} {'RTT p50':>8} {'p90':>7} {'p99':>7}  {'per-run p50':>13}  {'CPU':>5}  added one-way p50")
for case, n, p, lo, hi, busy in rows:
    added = "" if case == "direct" else f"{(p[50] - direct) / 2:+.1f} us"
    print(f"{case:<9} {n:>8} {p[50]:>8.1f} {p[90]:>7.1f} {p[99]:>7.1f}  {lo:>6.1f}-{hi:<6.1f}  {busy:>4.0f}%  {added}")
mm, ms = rows[1][2][50], rows[2][2][50]
added = f"{(ms - direct) / (mm - direct):.2f}" if ms > direct and mm > direct else "n/a (not above direct)"
print(f"mslink / {other}: RTT p50 {ms / mm:.2f}, added one-way p50 {added}")
print("(RTT in microseconds, percentiles pooled over all runs of a case; CPU: the client and the")
print(" emulator, user + system time over wall time of their runs, in % of one CPU)")
EOF
