#!/usr/bin/env bash
# The sandboxes' rows of bench/run.sh (one job per process, batches -j 1
# and -j 2: bare, the floor, isolate-style slots, bubblewrap, sbx-run with
# and without slots) again in the kernel matrix's guest: Debian 12's
# kernel with cgroup v2 (t/guest/run), where slots keep the network
# namespace but not the cgroups (no resettable memory.peak before 6.12),
# and Debian 13's (6.12), where they keep both.  QEMU emulates the CPU
# without KVM here: every figure is tens of times the host's, so fewer
# runs, and only the ratios between rows mean anything.
set -uo pipefail
cd "$(dirname "$0")/.."
for dist in ${GUEST_DISTS:-bookworm trixie}; do
	echo "# guest: Debian $dist's kernel under QEMU (t/guest/run --dist $dist)"
	t/guest/run --dist "$dist" --timeout "${GUEST_TIMEOUT:-3000}" \
		env N="${GUEST_N:-6}" ROUNDS="${GUEST_ROUNDS:-2}" NB="${GUEST_NB:-30}" BENCH_SLOTS_ONLY=1 \
		BUILD=build/guest-bench bench/run.sh 2> "build/guest-bench-$dist.err"
	rc=$?
	[ $rc -eq 0 ] || echo "# the guest's benchmark ended with status $rc: $(tail -1 "build/guest-bench-$dist.err")"
	echo
done
