"""`python -m trainscope ARGS`: the same as the `trainscope` command."""
from trainscope import main

main()
