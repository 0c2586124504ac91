#!/usr/bin/env bash
# Tunnel throughput benchmark (docs/PERFORMANCE.md): iperf3 TCP between two network namespaces
# over a veth, plain and through `mslink tunnel` (one raw service; TCP on Selective Repeat), with
# the CPU time of each tunnel process. Needs root, ip, iperf3, python3. Usage: bench_iperf.sh MSLINK [SECONDS]
# Namespaces mslt-ba-PID / mslt-bb-PID are removed on exit.
set -euo pipefail
M=$1; T=${2:-10}
P=$$; A=mslt-ba-$P; B=mslt-bb-$P; D=$(mktemp -d)
cleanup() { kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; ip netns del $A 2>/dev/null || true; ip netns del $B 2>/dev/null || true; rm -rf $D; }
trap cleanup EXIT
ip netns add $A; ip netns add $B
ip -n $A link add v0 type veth peer name v1 netns $B
ip -n $A addr add 192.168.60.1/24 dev v0; ip -n $A link set v0 up; ip -n $A link set lo up
ip -n $B addr add 192.168.60.2/24 dev v1; ip -n $B link set v1 up; ip -n $B link set lo up
$M tunnel genkey > $D/a.key; $M tunnel genkey > $D/b.key
iperf() { # $1 = server address; prints Mbit/s received
  ip netns exec $B iperf3 -s -1 -D -p 5201 >/dev/null; sleep 0.3
  ip netns exec $A iperf3 -c $1 -p 5201 -t $T -J | python3 -c 'import json,sys; r=json.load(sys.stdin)["end"]; print("%.0f Mbit/s (sender retransmits %d)" % (r["sum_received"]["bits_per_second"]/1e6, r["sum_sent"].get("retransmits",0)))'
}
echo "plain veth:            $(iperf 192.168.60.2)"
for svc in raw selective_repeat; do
  cat > $D/a.toml <<EOT
listen = "192.168.60.1:51900"
peer = "192.168.60.2:51900"
private_key_file = "$D/a.key"
peer_public_key = "$($M tunnel pubkey < $D/b.key)"
[tun]
name = "mslt0"
address = "10.60.0.1/24"
mtu = 1400
txqueuelen = 2000
[link]
crc = false
frame_size = 1432
mtu = 1400
[[link.service]]
name = "tcp"
scheme = "$svc"
window = 1024
timeout_ms = 30
nack_interval_ms = 10
EOT
  [ $svc = raw ] && sed -i '/^window\|^timeout_ms\|^nack_interval_ms/d' $D/a.toml
  sed -e 's/192.168.60.1:51900/192.168.60.2:51900/' -e '/^peer = /d' -e 's/a.key/b.key/' \
      -e "s|^peer_public_key.*|peer_public_key = \"$($M tunnel pubkey < $D/a.key)\"|" -e 's/10.60.0.1/10.60.0.2/' $D/a.toml > $D/b.toml
  ip netns exec $B $M tunnel $D/b.toml --log-level warn & PB=$!
  ip netns exec $A $M tunnel $D/a.toml --log-level warn & PA=$!
  sleep 1
  ticks() { awk '{print $14+$15}' /proc/$1/stat; }
  ca=$(ticks $PA); cb=$(ticks $PB); t0=$(date +%s.%N)
  r=$(iperf 10.60.0.2)
  t1=$(date +%s.%N); ca=$(( $(ticks $PA) - ca )); cb=$(( $(ticks $PB) - cb ))
  echo "tunnel, $svc: $r; CPU of tunnel A $(python3 -c "print(round($ca/100/($t1-$t0)*100))")%, B $(python3 -c "print(round($cb/100/($t1-$t0)*100))")% of one core"
  ip netns exec $A ip -s link show mslt0 | awk '/TX:/{getline; print "  A TUN tx queue drops: " $4}'
  kill $PA $PB; wait $PA $PB 2>/dev/null || true
done
