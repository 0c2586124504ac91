"""Which UDP ports does tshark dissect as a protocol, for the simulator's packets?

Takes the first packet of a simulator capture (classic pcap, LINKTYPE_RAW, as `mslink sim
--pcap` writes), writes one copy per port 1024-65535 (as both source and destination, each
from its own address so no two share a conversation), lets tshark dissect them, and prints how
many ports a dissector claims and the longest runs that read as plain data. The simulator's
default destination ports (crates/sim/src/packet.rs, APP_PORT_BASE) come from this.

    mslink sim scenarios/bench/cbr_1000_flows.toml --out /tmp/pt --pcap \
        --set sim.duration_s=0.2 -q --no-plots
    python3 bench/tshark_port_probe.py /tmp/pt/pcap/p0_r0_seg0_ltr.pcap
"""

from __future__ import annotations

import struct
import subprocess
import sys
import tempfile


def main(path: str) -> None:
    with open(path, "rb") as f:
        data = f.read()
    order = ">" if data[:4] == b"\xa1\xb2\xc3\xd4" else "<"
    header = data[:24]
    incl = struct.unpack(order + "IIII", data[24:40])[2]
    packet = bytearray(data[40 : 40 + incl])
    out = [header]
    for port in range(1024, 65536):
        q = bytearray(packet)
        q[12:16] = bytes([10, (port >> 8) & 255, port & 255, 1])  # a source of its own
        q[10:12] = b"\0\0"  # IPv4 checksum not checked by tshark by default
        q[20:24] = struct.pack(">HH", port, port)
        q[26:28] = b"\0\0"  # no UDP checksum
        out.append(struct.pack(order + "IIII", port, 0, len(q), len(q)) + bytes(q))
    with tempfile.NamedTemporaryFile(suffix=".pcap") as f:
        f.write(b"".join(out))
        f.flush()
        text = subprocess.run(
            ["tshark", "-r", f.name, "-T", "fields", "-e", "udp.dstport", "-e", "frame.protocols"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    claimed = set()
    for line in text.splitlines():
        port, protocols = line.split("\t")
        if not protocols.endswith("udp:data"):
            claimed.add(int(port))
    runs, start = [], None
    for port in range(1024, 65537):
        if port < 65536 and port not in claimed:
            start = port if start is None else start
        elif start is not None:
            runs.append((port - start, start, port - 1))
            start = None
    print(f"{len(claimed)} of {65536 - 1024} ports are dissected as a protocol")
    for n, first, last in sorted(runs, reverse=True)[:5]:
        print(f"plain data on {first}-{last} ({n} ports)")


if __name__ == "__main__":
    main(sys.argv[1])
