#!/bin/bash
# Usage: report.sh FILE
#
# FILE holds one "<name> <bytes>" pair a line. Prints the total bytes of each name, one line a
# name, as the name, a tab and the total, names sorted in byte order (as `LC_ALL=C sort`), then
# a last line "TOTAL", a tab and the sum of all bytes.
set -euo pipefail

awk '{
	total[$1] += $2
	sum += $2
}
END {
	for (name in total) printf "%s\t%d\n", name, total[name] | "LC_ALL=C sort"
	close("LC_ALL=C sort")
	printf "TOTAL\t%d\n", sum
}' "$1"
