"""Traffic for the `mslink emulate` tests: TCP and UDP senders and receivers that write what
they saw to a file (byte counts, payload checksums, arrival timeline). Standard library only."""
import hashlib
import socket
import sys
import time


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
    h, n, marks = hashlib.sha256(), 0, []
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        h.update(d)
        n += len(d)
        marks.append((time.monotonic(), n))
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
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    s.settimeout(30)
    seen = set()
    try:
        while True:
            d, _ = s.recvfrom(65536)
            seen.add(int.from_bytes(d[:4], "big"))
            s.settimeout(idle)
    except socket.timeout:
        pass
    with open(out, "w") as f:
        f.write(f"{len(seen)}\n")


def udp_client(host, port, count, size, pps):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    t0 = time.monotonic()
    for k in range(count):
        while time.monotonic() < t0 + k / pps:
            time.sleep(0.0005)
        s.sendto(k.to_bytes(4, "big") + bytes(size - 4), (host, port))


if __name__ == "__main__":
    m, a = sys.argv[1], sys.argv[2:]
    if m == "tcp-server":
        tcp_server(int(a[0]), a[1])
    elif m == "tcp-client":
        tcp_client(a[0], int(a[1]), float(a[2]), a[3], a[4] if len(a) > 4 else "")
    elif m == "udp-server":
        udp_server(int(a[0]), a[1], float(a[2]))
    elif m == "udp-client":
        udp_client(a[0], int(a[1]), int(a[2]), int(a[3]), float(a[4]))
