#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Generation speed: spillgen alone into net_null, 64-byte IPv4/UDP frames,
# 100k Zipf(1.0) flows, one TX lcore, as fast as it goes (Mpps per core); then
# rate accuracy at 10 kpps, 100 kpps and 1 Mpps. Figures are printed, never
# asserted (wall-clock results depend on the machine and its load).
#
#   bench_gen.sh SPILLGEN [SECONDS]
set -euo pipefail
SG=$1
SECS=${2:-3}
run() {
	timeout 120 "$SG" --lcores '0@0,1@1' --no-huge -m 512 --no-pci \
		--file-prefix "sg-bench-$$" --log-level 'lib.*:warning' --vdev net_null0 \
		-- --tx-only --no-progress ${SG_EXTRA:-} -f 100000 -z 1.0 -S 64 -d "$SECS" --drain 0 -q \
		--json /dev/stdout "$@" 2>/dev/null |
		/usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
p = r["tx"]["phases"][0]
t = p["target_pps"]
if t is None:
    print("max rate:   %.2f Mpps on one TX lcore (64 B, 100k Zipf(1.0) flows, net_null)" % (p["achieved_pps"] / 1e6))
else:
    print("target %9d pps: achieved %12.1f pps, error %+.4f%%, written off %d" % (t, p["achieved_pps"], p["rate_error_pct"], p["skipped"]))
'
}
run -r 0
for r in 10000 100000 1000000; do
	run -r "$r"
done
