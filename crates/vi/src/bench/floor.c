/* The machine's floor for a shared-memory ping-pong (`mslink bench --floor`): two processes,
 * one per CPU, spin on sequence words in a shared mapping and move each message with memcpy,
 * with nothing else on the path (no descriptors, no completion queue, no provider). The
 * round trip of the VI backends is compared with this one in the same run, measured just
 * before and just after each of their points.
 *
 * Usage: floor SIZE ITERS WARMUP SERVER_CPU CLIENT_CPU   (a CPU of -1: do not pin)
 * Output: ITERS lines, each one round trip in nanoseconds (CLOCK_MONOTONIC, as Rust's
 * Instant). Exit status 2 with a message on stderr on bad arguments, a failed system call,
 * or a peer that stops answering for 10 s.
 *
 * Built like the VI shared-memory path, so that the ratio measures the VI layer and nothing
 * else (issue 34):
 * - the payload moves both ways as it does through a VI echo: the client copies its message
 *   from its private buffer into the shared one (a post send), the server copies it out into
 *   a private buffer (its receive descriptor) and back into its own shared buffer (its send),
 *   and the client copies the reply out (its receive): four copies per round trip;
 * - the same spin policy as the VI's polling wait (`Nic::cq_wait`, WaitMode::Poll): no pause
 *   instruction between checks, one per 64 checks.
 *
 * Layout: the client's sequence word, the server's sequence word, the client's message
 * buffer and the server's message buffer each start on their own 128-byte block (two cache
 * lines: the adjacent-line prefetcher pairs lines), so the only lines that move between the
 * cores are the ones a message needs. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 128

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void pin(long cpu) {
    if (cpu < 0) return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET((int)cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0) die("sched_setaffinity");
}

static inline void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Spin until *w == want; give up after 10 s without it. */
static void await(_Atomic uint64_t *w, uint64_t want) {
    uint64_t spins = 0, start = 0;
    while (atomic_load_explicit(w, memory_order_acquire) != want) {
        /* As the VI's polling wait: one pause per 64 checks, none in between. */
        if ((++spins & 63) == 0) relax();
        if ((spins & 0xfffff) == 0) {
            uint64_t t = now_ns();
            if (start == 0) start = t;
            else if (t - start > 10000000000ull) {
                fprintf(stderr, "floor: peer stopped answering\n");
                exit(2);
            }
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: floor SIZE ITERS WARMUP SERVER_CPU CLIENT_CPU\n");
        return 2;
    }
    char *end;
    long size = strtol(argv[1], &end, 10), iters = strtol(argv[2], &end, 10);
    long warmup = strtol(argv[3], &end, 10);
    long scpu = strtol(argv[4], &end, 10), ccpu = strtol(argv[5], &end, 10);
    if (size < 0 || size > (1l << 30) || iters < 1 || warmup < 0) {
        fprintf(stderr, "floor: bad SIZE/ITERS/WARMUP\n");
        return 2;
    }
    size_t buf = ((size_t)size + BLOCK - 1) / BLOCK * BLOCK;
    if (buf == 0) buf = BLOCK;
    size_t len = 2 * BLOCK + 2 * buf;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) die("mmap");
    _Atomic uint64_t *cseq = (_Atomic uint64_t *)m;
    _Atomic uint64_t *sseq = (_Atomic uint64_t *)(m + BLOCK);
    char *cbuf = m + 2 * BLOCK, *sbuf = m + 2 * BLOCK + buf;
    char *out = malloc(buf), *in = malloc(buf);
    uint64_t *rtt = malloc(sizeof(uint64_t) * (size_t)iters);
    if (!out || !in || !rtt) die("malloc");
    memset(cbuf, 7, buf);
    memset(out, 0, buf);
    memset(in, 0, buf);
    long total = iters + warmup;
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin(scpu);
        char *priv = malloc(buf);
        if (!priv) die("malloc");
        for (uint64_t i = 1; i <= (uint64_t)total; i++) {
            await(cseq, i);
            memcpy(priv, cbuf, (size_t)size); /* receive into the server's descriptor */
            memcpy(sbuf, priv, (size_t)size); /* send it back */
            atomic_store_explicit(sseq, i, memory_order_release);
        }
        _exit(0);
    }
    pin(ccpu);
    for (uint64_t i = 1; i <= (uint64_t)total; i++) {
        uint64_t t0 = now_ns();
        memcpy(cbuf, out, (size_t)size); /* post the send */
        atomic_store_explicit(cseq, i, memory_order_release);
        await(sseq, i);
        memcpy(in, sbuf, (size_t)size);
        uint64_t t1 = now_ns();
        if (i > (uint64_t)warmup) rtt[i - 1 - (uint64_t)warmup] = t1 - t0;
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "floor: server process failed\n");
        return 2;
    }
    if (memcmp(in, cbuf, (size_t)size) != 0) {
        fprintf(stderr, "floor: reply differs from the message\n");
        return 2;
    }
    for (long k = 0; k < iters; k++) printf("%llu\n", (unsigned long long)rtt[k]);
    return fflush(stdout) == 0 ? 0 : 2;
}
