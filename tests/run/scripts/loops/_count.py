# Shared by the loop-style scripts: the script's own step counter, printed however the program
# ends (normal end, --steps' SystemExit, sys.exit, an exception) so the test can compare it with
# what trainscope counted.
import atexit

n = [0]


def step():
    n[0] += 1


@atexit.register
def _report():
    print("COUNT %d" % n[0], flush=True)
