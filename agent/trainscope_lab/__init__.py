"""trainscope experiment runners: the three-run lab, the DataLoader sweep and the max-batch search.

Each runner is launched by the C++ side (`trainscope lab|loader|max-batch`) in a fresh Python
process for one configuration, and prints exactly one JSON result line on stdout, prefixed with
RESULT_PREFIX so that a model's own prints cannot be mistaken for it. Progress goes to stderr as
`@ts-progress DONE TOTAL` lines. Plain stdlib + torch; PyTorch 1.13 and 2.x are feature-detected.
"""

RESULT_PREFIX = "@ts-result "
PROTOCOL = 1
