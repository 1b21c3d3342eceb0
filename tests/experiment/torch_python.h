#pragma once
// The experiments' real-run tests: PyTorch 2.x from the checkout's .venv (tests/support/torch_python.h).
#include "support/torch_python.h"

#define TS_REQUIRE_TORCH()                                                                        \
  if (ts::test::torch_python().empty())                                                           \
  GTEST_FAIL() << "needs a Python with torch (scripts/bootstrap makes .venv); none found"
