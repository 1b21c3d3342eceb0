# Fails at import, before any step: the report must say so, with the error's last lines.
import torch  # noqa: F401

import trainscope_test_module_that_does_not_exist  # noqa: F401
