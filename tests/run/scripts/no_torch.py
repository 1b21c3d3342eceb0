# Run with a Python that has no torch: the program must still run and exit normally.
import sys
total = sum(i * i for i in range(100000))
print("no_torch: python", sys.version.split()[0], "sum", total, flush=True)
sys.exit(3)
