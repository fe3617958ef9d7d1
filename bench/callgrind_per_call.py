#!/usr/bin/env python3
"""callgrind_per_call.py SMALL LARGE CALLS TOP LABEL

Instructions per call from two callgrind profiles of the same host, one run
with CALLS fewer calls than the other: the difference of the totals, and of
each function's own (exclusive) count, over CALLS. Start-up and shutdown are
the same in both runs, so they drop out.
"""
import re
import subprocess
import sys


def own_counts(path):
    """Each function's exclusive instruction count, and the program's total."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", path],
                          capture_output=True, text=True, check=True).stdout
    counts, total = {}, 0
    for line in text.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$", line)
        if not m:
            continue
        count, name = int(m.group(1).replace(",", "")), m.group(2)
        if name.startswith("PROGRAM TOTALS"):
            total = count
            continue
        name = re.sub(r"\s*\[[^\]]*\]$", "", name)
        name = re.sub(r"^(\?\?\?|\S*?\.(?:c|S|h|cc|cpp|hpp)):", "", name)  # the source file, or ???
        name = name.replace("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >",
                            "std::string")
        name = re.sub(r"nlohmann::json_abi_v[\d_]+::basic_json<std::map, std::vector, std::string, bool, long, "
                      r"unsigned long, double, std::allocator, nlohmann::json_abi_v[\d_]+::adl_serializer, "
                      r"std::vector<unsigned char, std::allocator<unsigned char> >(, void)? ?>", "Json", name)
        counts[name] = counts.get(name, 0) + count
    return counts, total


def main():
    small, large, calls, top, label = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    a, a_total = own_counts(small)
    b, b_total = own_counts(large)
    print(f"{label}: {(b_total - a_total) / calls:,.0f} instructions per call")
    rows = sorted(((b.get(k, 0) - a.get(k, 0)) / calls, k) for k in set(a) | set(b))
    for per_call, name in reversed(rows[-top:]):
        print(f"  {per_call:8,.0f}  {name[:150]}")


if __name__ == "__main__":
    main()
