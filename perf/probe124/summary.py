"""One line per profiled kernel launch of perf/probe124's ncu.csv: its name, then each metric's value.

python perf/probe124/summary.py ncu.csv"""

import csv
import sys


def main(path: str) -> None:
    with open(path, encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(line for line in f if line.startswith('"'))]
    launches: dict[str, dict[str, str]] = {}
    for row in rows:
        key = f"{row['ID']:>3} {row['Kernel Name'][:60]}"
        launches.setdefault(key, {})[row["Metric Name"]] = f"{row['Metric Value']} {row['Metric Unit']}".strip()
    for key, metrics in launches.items():
        print(key)
        for name, value in sorted(metrics.items()):
            print(f"      {name:60s} {value}")


if __name__ == "__main__":
    main(sys.argv[1])
