"""One-line checks for the Python test scripts (tests/run/scripts, tests/package): each stops the
script at the first failure with "FAIL name detail" and a non-zero exit, and counts the passes."""
import sys


class Checks:
    def __init__(self, verbose=True):
        self.passed = 0
        self.verbose = verbose  # print the detail of passing checks too

    def __call__(self, name, cond, detail=""):
        if not cond:
            print("FAIL %s %s" % (name, detail), flush=True)
            sys.exit(1)
        self.passed += 1
        print(("ok   %s %s" % (name, detail)) if self.verbose else ("ok %s" % name), flush=True)
