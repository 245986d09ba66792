#!/bin/bash
# Usage: report.sh FILE
#
# FILE holds one "<name> <bytes>" pair a line. Prints the total bytes of each name, one line a
# name, as the name, a tab and the total, names sorted in byte order (as `LC_ALL=C sort`), then
# a last line "TOTAL", a tab and the sum of all bytes.
set -euo pipefail

awk '{
	if (!($1 in total)) order[++n] = $1
	total[$1] += $2
}
END {
	for (i = 1; i <= n; i++) printf "%s: %d\n", order[i], total[order[i]]
}' "$1"
