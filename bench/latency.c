/* UDP ping-pong for bench/latency.sh: one client, one echo server, one message in flight.
 *
 *   latency server            binds UDP 0.0.0.0, an ephemeral port; prints the port, then
 *                              echoes every datagram to its sender until killed
 *   latency client HOST PORT COUNT SIZE WARMUP [GAP_US]
 *                              sends WARMUP + COUNT datagrams of SIZE bytes, each after the
 *                              echo of the previous one (and GAP_US microseconds of sleep,
 *                              default 0), and prints the round-trip time of the last COUNT in
 *                              nanoseconds (CLOCK_MONOTONIC), one per line; an echo not back
 *                              within 1 s is counted on stderr and not timed
 *
 * Compiled by bench/latency.sh at run time; the same binary runs directly, inside
 * `mm-delay 0` and inside `mslink emulate`, so the endpoints cost the same in every case. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what) {
    fprintf(stderr, "latency: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static long arg(const char *s, const char *name, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) {
        fprintf(stderr, "latency: %s must be an integer from %ld to %ld, got %s\n", name, lo, hi, s);
        exit(2);
    }
    return v;
}

static void server(void) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) < 0) die("getsockname");
    printf("%u\n", ntohs(a.sin_port));
    fflush(stdout);
    char buf[65536];
    for (;;) {
        struct sockaddr_in peer;
        socklen_t plen = sizeof peer;
        ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&peer, &plen);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("recvfrom");
        }
        if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, plen) < 0 && errno != ENOBUFS)
            die("sendto");
    }
}

static int client(const char *host, long port, long count, long size, long warmup, long gap_us) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        fprintf(stderr, "latency: HOST must be an IPv4 address, got %s\n", host);
        return 2;
    }
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    struct timeval tv = {.tv_sec = 1};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0) die("setsockopt");
    char *msg = calloc(1, (size_t)size), *back = malloc((size_t)size + 1);
    uint64_t *rtt = malloc(sizeof *rtt * (size_t)count);
    if (!msg || !back || !rtt) die("malloc");
    long timed = 0, lost = 0;
    struct timespec gap = {.tv_sec = gap_us / 1000000, .tv_nsec = (gap_us % 1000000) * 1000};
    for (long i = 0; i < warmup + count; i++) {
        if (gap_us > 0 && i > 0) nanosleep(&gap, NULL);
        uint32_t seq = (uint32_t)i;
        memcpy(msg, &seq, size < 4 ? (size_t)size : 4);
        uint64_t t0 = now_ns();
        if (send(fd, msg, (size_t)size, 0) < 0) die("send");
        for (;;) {
            ssize_t n = recv(fd, back, (size_t)size + 1, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) { lost++; break; }
            if (n < 0) die("recv");
            if (n != size || (size >= 4 && memcmp(back, &seq, 4) != 0)) continue; /* a late echo */
            if (i >= warmup) rtt[timed++] = now_ns() - t0;
            break;
        }
    }
    for (long i = 0; i < timed; i++) printf("%llu\n", (unsigned long long)rtt[i]);
    if (lost) fprintf(stderr, "latency: %ld of %ld echoes not back within 1 s\n", lost, warmup + count);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "server") == 0) server();
    if ((argc == 7 || argc == 8) && strcmp(argv[1], "client") == 0)
        return client(argv[2], arg(argv[3], "PORT", 1, 65535), arg(argv[4], "COUNT", 1, 100000000),
                      arg(argv[5], "SIZE", 4, 65507), arg(argv[6], "WARMUP", 0, 100000000),
                      argc == 8 ? arg(argv[7], "GAP_US", 0, 10000000) : 0);
    fprintf(stderr, "usage: latency server | latency client HOST PORT COUNT SIZE WARMUP [GAP_US]\n");
    return 2;
}
