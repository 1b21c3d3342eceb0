// The source the tests' shared precompiled header (ts_test_pch, tests/CMakeLists.txt) is built with;
// it compiles nothing of its own.
