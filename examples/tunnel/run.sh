#!/bin/sh
# Both ends of examples/tunnel/a.toml and b.toml, each in a network namespace of its own joined
# by a veth pair (192.168.50.1 and .2), TCP through the tunnel (10.50.0.1 -> 10.50.0.2) with
# iperf3 for SECONDS (default 5), A's counters, then both ends stopped and everything removed.
# Needs root, iproute2, iperf3 and mslink on PATH:
#
#   sudo env "PATH=$PATH" examples/tunnel/run.sh [SECONDS]
#
# It makes the pre-shared key examples/tunnel/psk first if there is none (git ignores it).
set -eu
cd "$(dirname "$0")/../.."          # the repository root (the configs' psk_file is beside them)
secs=${1:-5}
for tool in mslink ip iperf3; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool is not on PATH" >&2; exit 1; }
done
[ -s examples/tunnel/psk ] || (umask 077 && mslink tunnel genpsk > examples/tunnel/psk)

a=mslink-tun-a-$$ b=mslink-tun-b-$$ pa= pb=
cleanup() {
    [ -n "$pa" ] && kill "$pa" 2>/dev/null
    [ -n "$pb" ] && kill "$pb" 2>/dev/null
    wait 2>/dev/null || true
    ip netns del "$a" 2>/dev/null || true
    ip netns del "$b" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$a"
ip netns add "$b"
ip -n "$a" link add v0 type veth peer name v1 netns "$b"
ip -n "$a" addr add 192.168.50.1/24 dev v0
ip -n "$a" link set v0 up
ip -n "$b" addr add 192.168.50.2/24 dev v1
ip -n "$b" link set v1 up

ip netns exec "$b" mslink tunnel examples/tunnel/b.toml & pb=$!
ip netns exec "$a" mslink tunnel examples/tunnel/a.toml & pa=$!
sleep 1
ip netns exec "$b" iperf3 -s -1 -D
sleep 0.3
ip netns exec "$a" iperf3 -c 10.50.0.2 -t "$secs"   # TCP: the "bulk" service (Selective Repeat)
kill -USR1 "$pa"                                     # A prints its counters
sleep 0.3
