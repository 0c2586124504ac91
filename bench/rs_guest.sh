#!/usr/bin/env bash
# Reed-Solomon on an AVX2-only host (issue 34): boot a KVM guest whose CPU is this machine's
# with GFNI and every AVX-512 feature removed from CPUID, and run in it
#   * the rs_simd and rs_oracle tests (which kernel RsCodec::new picks on such a host, every
#     available kernel against the scalar codec and against reedsolo's codewords), and
#   * `cargo bench -p mslink-link --bench rs` (the same criterion binary, run in the guest).
# The guest's /proc/cpuinfo model name and flags are printed first, so every figure names the
# CPU it ran on. Output: the guest's console, also kept in $OUT (default target/rs-guest.log).
#
#   bench/rs_guest.sh                      # every code
#   bench/rs_guest.sh 'RS\(255,223\)'      # a criterion filter
#
# Needs root (KVM, apt), /dev/kvm, and Debian's package registry for qemu-system-x86,
# busybox-static and a cloud kernel (downloaded, not installed). Leaves nothing running; the
# guest's files live in a temporary directory removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
FILTER=${1:-}
OUT=${OUT:-target/rs-guest.log}
MEASURE=${MEASURE:-3}
# ACCEL=kvm (default): the figures are this machine's cores. ACCEL=tcg: QEMU's emulated "max"
# CPU (AVX2, no GFNI, no AVX-512) where KVM cannot boot a stock kernel (e.g. a nested KVM that
# is not VMX/SVM); it proves the dispatch and the kernels' results, and skips the benchmark,
# whose emulated timings would say nothing about any real CPU. With ACCEL=tcg, CPU=Nehalem
# (SSSE3 and SSE4.2, no AVX) checks the SSSE3 kernel's host the same way. `./dev test` runs both.
ACCEL=${ACCEL:-kvm}

case $ACCEL in
kvm) [ -e /dev/kvm ] || { echo "rs_guest.sh: /dev/kvm is missing; run on a host with KVM, or ACCEL=tcg for the tests alone" >&2; exit 1; } ;;
tcg) ;;
*) echo "rs_guest.sh: ACCEL must be kvm or tcg, not '$ACCEL'" >&2; exit 1 ;;
esac
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[ -x /bin/busybox ] || need+=(busybox-static)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]} (Debian packages)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A kernel for the guest, unpacked from Debian's cloud image package (not installed).
(cd "$work" && apt-get download linux-image-cloud-amd64 >/dev/null 2>&1) ||
    { apt-get update -qq && (cd "$work" && apt-get download linux-image-cloud-amd64 >/dev/null 2>&1); }
kpkg=$(dpkg -I "$work"/linux-image-cloud-amd64_*.deb | sed -n 's/^ Depends: \([^ ]*\).*/\1/p')
(cd "$work" && apt-get download "$kpkg" >/dev/null 2>&1)
dpkg -x "$work/$kpkg"_*.deb "$work/kernel"
vmlinuz=$(ls "$work"/kernel/boot/vmlinuz-*)

# The binaries: the criterion bench and the two test programs, built as cargo builds them.
exe() { sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1; }
bench=
if [ "$ACCEL" = kvm ]; then
    bench=$(cargo bench -p mslink-link --bench rs --no-run --message-format=json 2>/dev/null | grep '"name":"rs"' | exe)
fi
simd=$(cargo test --release -p mslink-link --test rs_simd --no-run --message-format=json 2>/dev/null | grep '"name":"rs_simd"' | exe)
oracle=$(cargo test --release -p mslink-link --test rs_oracle --no-run --message-format=json 2>/dev/null | grep '"name":"rs_oracle"' | exe)
for b in "$simd" "$oracle" ${bench:+"$bench"}; do [ -x "$b" ] || { echo "rs_guest.sh: build failed" >&2; exit 1; }; done

root="$work/root"
mkdir -p "$root"/{bin,bench,proc,sys,dev,tmp,lib64,lib/x86_64-linux-gnu}
cp /bin/busybox "$root/bin/"
[ -z "$bench" ] || cp "$bench" "$root/bench/rs"
cp "$simd" "$root/bench/rs_simd"
cp "$oracle" "$root/bench/rs_oracle"
for lib in $(ldd "$simd" "$oracle" ${bench:+"$bench"} | grep -o '/lib[^ ]*' | sort -u); do
    cp -L "$lib" "$root$lib"
done
cat >"$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
cd /tmp
echo "=== guest CPU"
grep -m1 'model name' /proc/cpuinfo
grep -m1 '^flags' /proc/cpuinfo
echo "=== rs_simd"
/bench/rs_simd --test-threads 1 --nocapture 2>&1; echo "rs_simd exit \$?"
echo "=== rs_oracle"
/bench/rs_oracle --test-threads 1 2>&1; echo "rs_oracle exit \$?"
if [ $ACCEL = kvm ]; then
echo "=== cargo bench -p mslink-link --bench rs -- $FILTER --warm-up-time 1 --measurement-time $MEASURE"
/bench/rs --bench $FILTER --warm-up-time 1 --measurement-time $MEASURE --noplot 2>&1; echo "bench exit \$?"
fi
echo "=== done"
poweroff -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initrd.gz"

# This machine's CPU without GFNI and AVX-512 (and the 512-bit-only extensions with them).
off=gfni,-arch-capabilities
for f in avx512f avx512dq avx512cd avx512bw avx512vl avx512ifma avx512vbmi avx512vbmi2 \
         avx512vnni avx512bitalg avx512-vpopcntdq avx512-bf16 avx512-fp16 avx512-vp2intersect; do
    off="$off,-$f"
done
if [ "$ACCEL" = kvm ]; then cpu="host,-$off"; else cpu=${CPU:-max}; fi
mkdir -p "$(dirname "$OUT")"
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); guest: -accel $ACCEL -cpu $cpu" | tee "$OUT"
# Emulated, the tests take about 20 s; a benchmark of every code under KVM about 10 minutes.
if [ "$ACCEL" = kvm ]; then limit=3600; else limit=600; fi
timeout "$limit" qemu-system-x86_64 -accel "$ACCEL" -cpu "$cpu" -smp 2 -m 2048 \
    -kernel "$vmlinuz" -initrd "$work/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
    -nographic -no-reboot -monitor none -serial stdio </dev/null 2>&1 | tr -d '\r' | tee -a "$OUT" || true
grep -q '^=== done' "$OUT" || {
    echo "rs_guest.sh: the guest did not finish (see $OUT); where KVM cannot boot it, ACCEL=tcg runs the tests" >&2
    exit 1
}
for part in rs_simd rs_oracle; do
    grep -q "^$part exit 0" "$OUT" || { echo "rs_guest.sh: $part failed in the guest (see $OUT)" >&2; exit 1; }
done
if [ $ACCEL = kvm ]; then grep -q '^bench exit 0' "$OUT" || { echo "rs_guest.sh: the benchmark failed (see $OUT)" >&2; exit 1; }; fi
if grep -qw -e gfni -e avx512f <(grep -m1 '^flags' "$OUT"); then
    echo "rs_guest.sh: the guest still reports gfni or avx512f; this is not an AVX2-only host" >&2; exit 1
fi
echo "rs_guest.sh: $(grep -m1 -o "RsCodec::new runs.*" "$OUT") on CPU flags: $(grep -m1 "^flags" "$OUT" | grep -o -w -E "ssse3|avx2|gfni|avx512f" | tr "\n" " ")" >&2
