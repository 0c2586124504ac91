#!/bin/sh
# Benchmarks of `mslink emulate` (docs/PERFORMANCE.md, "Emulator"). Run as root from the
# repository root after `cargo build --release -p mslink-cli`, holding the build lock:
#   flock /tmp/mslink-build.lock crates/emu/bench.sh
# TCP is CUBIC throughout (this machine's default is BBR, which ignores random loss).
M=${M:-target/release/mslink}
T=${T:-10}
IPERF_S='iperf3 -s -1 >/dev/null'
iperf_c() { echo "sleep 0.5; iperf3 -C cubic -c \$MSLINK_LEFT -t $T | grep receiver"; }
for mtu in 1500 9000 65000; do
  echo "== unlimited link, no loss, MTU $mtu: plain veth, then emulate (TUN offloads on, the default)"
  $M emulate --pair --direct --quiet --set mtu=$mtu --left "$IPERF_S" --right "$(iperf_c)"
  $M emulate --pair --quiet --set mtu=$mtu --left "$IPERF_S" --right "$(iperf_c)"
done
echo "== unlimited link, no loss, MTU 1500: offloads without coalesced writes, then no offloads"
$M emulate --pair --quiet --set tun_coalesce=false --left "$IPERF_S" --right "$(iperf_c)"
$M emulate --pair --quiet --set tun_offload=false --left "$IPERF_S" --right "$(iperf_c)"
BUF="sysctl -qw net.ipv4.tcp_rmem='4096 131072 33554432' net.ipv4.tcp_wmem='4096 16384 33554432'"
echo "== 1 Gbit/s, 20 ms each way (40 ms RTT), no loss, unlimited queue"
$M emulate --pair --quiet --set rate_bps=1e9 --set delay_ms=20 --json /tmp/emu-1g.json \
  --left "$BUF; $IPERF_S" --right "$BUF; $(iperf_c)"
python3 -c "
import json; d=json.load(open('/tmp/emu-1g.json'))
for k in ('left_to_right','right_to_left'):
    p=d[k]['packets']
    drops=p['dropped_queue']+p['dropped_service_queue']+p['refused_too_large']+p['refused_malformed']+p['write_failed']
    print(k, 'in', p['received'], 'delivered', p['delivered'], 'emulator drops', drops)
print('kernel TUN drops (tx, rx)', {s: (v['tx_dropped'], v['rx_dropped']) for s,v in d['devices'].items()})
o=d['offload']
print('offloads', {s: (o[s]['gso_reads'], o[s]['gso_segments'], o[s]['coalesced_writes'], o[s]['coalesced_packets']) for s in ('left','right')}, '(super-packets read, packets, coalesced writes, packets)')"
echo "== one-way latency (sockperf ping-pong, 64-byte UDP messages): plain veth, then emulate"
for mode in --direct ""; do
  $M emulate --pair --quiet $mode --left 'sockperf sr -i 10.0.0.1 >/dev/null 2>&1' \
    --right "sleep 0.5; sockperf pp -i \$MSLINK_LEFT -t 5 -m 64 2>&1 | grep -E 'percentile (50|99).000'"
done
