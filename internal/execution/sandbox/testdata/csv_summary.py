"""Happy path: the CSV summary in Python, writing JSON to a declared output."""
import csv
import json
import sys

with open(sys.argv[1], newline="") as f:
    rows = list(csv.DictReader(f))
total = sum(int(r["amount"]) for r in rows)
with open(sys.argv[2], "w") as out:
    json.dump({"rows": len(rows), "sum": total}, out, sort_keys=True)
print("ok")
