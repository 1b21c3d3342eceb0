# Prints whether its stderr is a terminal (stdout), then fails with a message on stderr: under
# `trainscope run` on a terminal the job must still see one, and its message must still arrive.
import sys

print("stderr isatty: %s" % sys.stderr.isatty(), flush=True)
sys.stderr.write("\x1b[31mstderr_tty: red failure line\x1b[0m\n")
sys.exit(4)
