"""TCP and UDP over IPv4 or IPv6 for the emulator's IPv6 and nesting tests
(`emulate_ipv6.rs`, `emulate_shell.rs`): the address family follows the address given. Each
server binds the address it is given, writes a `ready` file once it listens (so a sender never
meets a closed port, which would add ICMP errors to exact packet counts) and writes what it
received to a file. Standard library only.

  python3 inet.py tcp-server ADDR PORT OUT       # OUT: "<bytes> <sha256>"
  python3 inet.py tcp-client ADDR PORT SECONDS OUT
  python3 inet.py udp-server ADDR PORT IDLE_S OUT   # OUT: "<datagrams read>"
  python3 inet.py udp-client ADDR PORT COUNT SIZE  # waits for `ready`, then sends
"""
import hashlib
import os
import socket
import sys
import time


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def ready():
    with open("ready", "w") as f:
        f.write("1\n")


def wait_ready():
    deadline = time.monotonic() + 30
    while not os.path.exists("ready"):
        if time.monotonic() > deadline:
            sys.exit("no server became ready")
        time.sleep(0.02)


def block():
    out, h = bytearray(), b"mslink"
    while len(out) < 65536:
        h = hashlib.sha256(h).digest()
        out += h
    return bytes(out)


def tcp_server(addr, port, out):
    ls = socket.socket(family(addr), socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(1)
    ready()
    c, _ = ls.accept()
    h, n = hashlib.sha256(), 0
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        h.update(d)
        n += len(d)
    c.close()
    with open(out, "w") as f:
        f.write(f"{n} {h.hexdigest()}\n")


def tcp_client(addr, port, seconds, out):
    wait_ready()
    s = socket.create_connection((addr, port), timeout=30)
    b, h, n = block(), hashlib.sha256(), 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.sendall(b)
        h.update(b)
        n += len(b)
    s.shutdown(socket.SHUT_WR)
    while s.recv(1024):
        pass
    with open(out, "w") as f:
        f.write(f"{n} {h.hexdigest()}\n")


def udp_server(addr, port, idle, out):
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    s.bind((addr, port))
    s.settimeout(30)
    ready()
    n = 0
    try:
        while True:
            s.recv(65536)
            n += 1
            s.settimeout(idle)
    except socket.timeout:
        pass
    with open(out, "w") as f:
        f.write(f"{n}\n")


def udp_client(addr, port, count, size):
    wait_ready()
    s = socket.socket(family(addr), socket.SOCK_DGRAM)
    for k in range(count):
        s.sendto(k.to_bytes(4, "big") + bytes(max(size - 4, 0)), (addr, port))
        time.sleep(0.002)


if __name__ == "__main__":
    m, a = sys.argv[1], sys.argv[2:]
    if m == "tcp-server":
        tcp_server(a[0], int(a[1]), a[2])
    elif m == "tcp-client":
        tcp_client(a[0], int(a[1]), float(a[2]), a[3])
    elif m == "udp-server":
        udp_server(a[0], int(a[1]), float(a[2]), a[3])
    elif m == "udp-client":
        udp_client(a[0], int(a[1]), int(a[2]), int(a[3]))
    else:
        sys.exit(f"unknown mode {m}")
