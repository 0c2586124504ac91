"""Traffic for the `mslink emulate` tests: TCP and UDP senders and receivers that write what
they saw to a file (byte counts, payload checksums, arrival timeline; for UDP also their
namespace's kernel counters). Standard library only; memory stays bounded however long a run
is (the soak test runs them for minutes)."""
import hashlib
import socket
import sys
import time

# The TCP timeline marks an arrival only if its last mark is at least this old (the first and
# the last arrivals are always marked): a long run's timeline stays small, yet a stall shows.
MARK_EVERY_S = 0.01
SO_RCVBUFFORCE = 33  # Linux; not exported by Python's socket module


def kernel_counters():
    """The Ip and Udp counters of /proc/net/snmp, which are the calling process's network
    namespace's own: each side of the emulator has a fresh namespace, so they count this run's
    traffic only (lines `Udp.NoPorts 0`, ...)."""
    out, head = [], {}
    with open("/proc/net/snmp") as f:
        for line in f:
            proto, rest = line.split(":", 1)
            if proto not in ("Ip", "Udp"):
                continue
            if proto not in head:
                head[proto] = rest.split()
            else:
                out += [f"{proto}.{k} {v}" for k, v in zip(head[proto], rest.split())]
    return out


def connect(host, port, cc):
    deadline = time.monotonic() + 10
    while True:
        s = socket.socket()
        if cc:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        try:
            s.connect((host, port))
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def payload_block():
    # A fixed, pseudo-random 64 KiB block: a SHA-256 chain, so the test needs no RNG.
    out, h = bytearray(), b"mslink"
    while len(out) < 65536:
        h = hashlib.sha256(h).digest()
        out += h
    return bytes(out)


def tcp_server(port, out):
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    c, _ = ls.accept()
    # The timeline starts at the connection's set-up (0 bytes).
    h, n, marks = hashlib.sha256(), 0, [(time.monotonic(), 0)]
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        h.update(d)
        n += len(d)
        t = time.monotonic()
        if t - marks[-1][0] >= MARK_EVERY_S or len(marks) == 1:
            marks.append((t, n))
        else:
            last = (t, n)
    if marks[-1][1] != n:
        marks.append(last)
    c.close()
    with open(out, "w") as f:
        f.write(f"{n} {h.hexdigest()}\n")
        for t, m in marks:
            f.write(f"{t:.6f} {m}\n")


def tcp_client(host, port, seconds, out, cc):
    s = connect(host, port, cc)
    block = payload_block()
    h, n = hashlib.sha256(), 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.sendall(block)
        h.update(block)
        n += len(block)
    s.shutdown(socket.SHUT_WR)
    while s.recv(1024):
        pass
    with open(out, "w") as f:
        f.write(f"{n} {h.hexdigest()}\n")


def udp_server(port, out, idle):
    """Receives datagrams numbered by their first 4 bytes until none came for `idle` seconds
    (or none at all for 30 s); writes `distinct`, `read` (datagrams), `max_seq`, `reordered`
    (arrivals numbered below one already seen), the one-way delay's `delay_min_us`,
    `delay_max_us` and `delay_p50_us` (from the sender's CLOCK_MONOTONIC stamp in bytes 4..12,
    a clock both namespaces share) and the namespace's kernel counters, one `key value` a
    line."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # A deep receive queue (as root, above rmem_max) so a receiver briefly off the CPU does not
    # overflow it; whatever still overflows is counted in Udp.RcvbufErrors.
    try:
        s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind(("0.0.0.0", port))
    s.settimeout(30)
    seen = bytearray()  # one bit per sequence number: bounded by the count sent
    distinct, read, top, reordered = 0, 0, -1, 0
    # Delays in 100 µs bins up to 10 s: bounded memory, a median to 0.1 ms.
    bins = {}
    dmin, dmax = None, None
    try:
        while True:
            d = s.recv(65536)
            now = time.monotonic_ns()
            k = int.from_bytes(d[:4], "big")
            read += 1
            if k < top:
                reordered += 1
            stamp = int.from_bytes(d[4:12], "big") if len(d) >= 12 else 0
            if stamp:
                us = (now - stamp) // 1000
                dmin = us if dmin is None else min(dmin, us)
                dmax = us if dmax is None else max(dmax, us)
                b = min(us // 100, 100_000)
                bins[b] = bins.get(b, 0) + 1
            if k >= 8 * len(seen):
                seen += bytes(max(k // 8 + 1 - len(seen), len(seen)))
            if not seen[k >> 3] & (1 << (k & 7)):
                seen[k >> 3] |= 1 << (k & 7)
                distinct += 1
            top = max(top, k)
            s.settimeout(idle)
    except socket.timeout:
        pass
    with open(out, "w") as f:
        f.write(f"distinct {distinct}\nread {read}\nmax_seq {top}\nreordered {reordered}\n")
        if dmin is not None:
            n, seen, p50 = sum(bins.values()), 0, 0
            for b in sorted(bins):
                seen += bins[b]
                if 2 * seen >= n:
                    p50 = b * 100 + 50
                    break
            f.write(f"delay_min_us {dmin}\ndelay_max_us {dmax}\ndelay_p50_us {p50}\n")
        f.write("\n".join(kernel_counters()) + "\n")


def udp_client(host, port, count, size, pps, out=None):
    """Sends `count` datagrams of `size` bytes (at least 12) at `pps` per second, each with its
    number and its CLOCK_MONOTONIC send time in ns; with `out`, writes `sent` and the
    namespace's kernel counters there, one `key value` a line."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t0 = time.monotonic()
    for k in range(count):
        while time.monotonic() < t0 + k / pps:
            time.sleep(0.0005)
        stamp = time.monotonic_ns().to_bytes(8, "big")
        s.sendto(k.to_bytes(4, "big") + stamp + bytes(max(size - 12, 0)), (host, port))
    if out:
        with open(out, "w") as f:
            f.write(f"sent {count}\n" + "\n".join(kernel_counters()) + "\n")


if __name__ == "__main__":
    m, a = sys.argv[1], sys.argv[2:]
    if m == "tcp-server":
        tcp_server(int(a[0]), a[1])
    elif m == "tcp-client":
        tcp_client(a[0], int(a[1]), float(a[2]), a[3], a[4] if len(a) > 4 else "")
    elif m == "udp-server":
        udp_server(int(a[0]), a[1], float(a[2]))
    elif m == "udp-client":
        udp_client(a[0], int(a[1]), int(a[2]), int(a[3]), float(a[4]), a[5] if len(a) > 5 else None)
