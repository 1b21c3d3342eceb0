// Parsing what /proc and the kernel hand us, on crafted text (real-world paths and lines).
#include <gtest/gtest.h>

#include "doctor/doctor.h"
#include "doctor/nvidia_facts.h"
#include "doctor/proc_inspect.h"
#include "sample/runtime_libraries.h"

using namespace ts::doctor;

TEST(RuntimeLibraries, ThreadpoolctlPrefixesAndVendoredCopies) {
  struct Case {
    const char* path;
    const char* kind;
    const char* vendor;
  } cases[] = {
      {"/venv/lib/python3.11/site-packages/torch/lib/libgomp-a34b3233.so.1", "openmp", "GNU OpenMP"},
      {"/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0", "openmp", "GNU OpenMP"},
      {"/opt/conda/lib/libiomp5.so", "openmp", "Intel OpenMP"},
      {"/venv/lib/python3.11/site-packages/sklearn/.libs/libomp.so", "openmp", "LLVM OpenMP"},
      {"/venv/lib/python3.11/site-packages/numpy.libs/libopenblas64_p-r0-15028c96.3.21.so", "blas", "OpenBLAS"},
      {"/venv/lib/python3.12/site-packages/scipy_openblas64/lib/libscipy_openblas64_-ff651d7f.so", "blas", "OpenBLAS"},
      {"/opt/conda/lib/libmkl_rt.so.2", "blas", "MKL"},
      {"/opt/conda/lib/libmkl_intel_thread.so.2", "blas", "MKL"},
      {"/usr/lib/x86_64-linux-gnu/libblis.so.4", "blas", "BLIS"},
      {"/usr/lib64/libflexiblas.so.3", "blas", "FlexiBLAS"},
      {"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0", "blas", "reference BLAS"},
      {"/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", "blas", "OpenBLAS"},
      {"/usr/lib/x86_64-linux-gnu/atlas/libblas.so.3.10.3", "blas", "ATLAS"},
      {"/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", "", ""},
      {"/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0", "", ""},
  };
  for (const auto& c : cases) {
    auto r = ts::sample::classify_library(c.path);
    EXPECT_EQ(r.kind, c.kind) << c.path;
    EXPECT_EQ(r.vendor, c.vendor) << c.path;
  }
}

TEST(ProcParse, MapsKeepsDistinctSharedObjects) {
  const char* maps =
      "5581a000-5581b000 r--p 00000000 08:01 123 /usr/bin/python3.11\n"
      "7f00a000-7f00b000 r--p 00000000 08:01 456 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
      "7f00b000-7f00c000 r-xp 00001000 08:01 456 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0\n"
      "7f00c000-7f00d000 rw-p 00000000 00:00 0 \n"
      "7f00d000-7f00e000 r--p 00000000 08:01 789 /home/a user/my env/lib/libopenblas.so.0\n"
      "7f00e000-7f00f000 r--p 00000000 08:01 790 /tmp/libfoo.so (deleted)\n"
      "7ffd0000-7ffd1000 rw-p 00000000 00:00 0 [stack]\n"
      "7f010000-7f011000 r--s 00000000 00:05 12 /dev/shm/torch_123_456\n";
  auto libs = ts::sample::parse_maps_libraries(maps);
  ASSERT_EQ(libs.size(), 3u);
  EXPECT_EQ(libs[0], "/usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0");
  EXPECT_EQ(libs[1], "/home/a user/my env/lib/libopenblas.so.0");
  EXPECT_EQ(libs[2], "/tmp/libfoo.so");
  EXPECT_TRUE(ts::sample::parse_maps_libraries("").empty());
}

TEST(ProcParse, EnvironFiltersKeys) {
  const char raw[] = "OMP_NUM_THREADS=4\0PATH=/bin\0MKL_NUM_THREADS=\0BROKEN\0=x\0";
  std::string env(raw, sizeof(raw) - 1);
  auto all = parse_environ(env);
  EXPECT_EQ(all.size(), 3u);
  auto some = parse_environ(env, {"OMP_NUM_THREADS", "MKL_NUM_THREADS"});
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some["OMP_NUM_THREADS"], "4");
  EXPECT_EQ(some["MKL_NUM_THREADS"], "");
}

TEST(ProcParse, WholeCoresOfABudget) {
  // The quota parsers themselves: tests/sample/procfs_test.cpp (doctor uses sample's reading).
  CpuBudget b;
  b.budget_cores = 1.5;
  EXPECT_EQ(b.whole_cores(), 2);  // 1.5 CPUs of quota keep two threads partly busy
  b.budget_cores = 8;
  EXPECT_EQ(b.whole_cores(), 8);
}

TEST(ProcParse, CpuinfoVendorAndModel) {
  auto [v, m] = ts::sample::parse_cpuinfo("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel name\t: AMD EPYC 7B13\n");
  EXPECT_EQ(v, "AuthenticAMD");
  EXPECT_EQ(m, "AMD EPYC 7B13");
}

TEST(KernelLog, XidLinesAndCodes) {
  std::vector<std::string> recs = {
      "6,1234,5678,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n",
      "6,1235,5679,-;usb 1-1: new device\n",
      "4,1236,5680,-;NVRM: Xid (PCI:0000:86:00): 13, Graphics SM Warp Exception\n"};
  auto lines = filter_xid_lines(recs);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(xid_code(lines[0]), 79);
  EXPECT_EQ(xid_code(lines[1]), 13);
  EXPECT_EQ(xid_code("NVRM: nothing"), -1);
}

TEST(TorchVersionPy, BothLayouts) {
  auto a = parse_torch_version_py("__version__ = '2.4.1+cu121'\ndebug = False\ncuda: Optional[str] = '12.1'\n");
  EXPECT_EQ(a.version, "2.4.1+cu121");
  EXPECT_EQ(a.cuda, "12.1");
  auto b = parse_torch_version_py("__version__ = '1.13.0a0'\ndebug = False\ncuda = None\ngit_version = 'x'\n");
  EXPECT_EQ(b.version, "1.13.0a0");
  EXPECT_EQ(b.cuda, "");
}
