// TraceIndex: rows sorted by (start, row) whatever the file order, and each GPU event's launch
// found by correlation id, with dense ids (a table) and sparse ones (a sorted vector) alike.
#include <gtest/gtest.h>

#include <random>

#include "analysis/trace_index.h"
#include "store_builder.h"

namespace ts::analysis {
namespace {

using testing::StoreBuilder;

// The blocking calls shared by the flags and idle attribution, named as CUDA's runtime and driver
// APIs and HIP name them (CUDA Runtime/Driver API references; ROCm's hipMemcpyWithStream is
// documented as hipMemcpyAsync + hipStreamSynchronize).
TEST(TraceIndex, BlockingCallNames) {
  for (const char* n : {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "hipStreamSynchronize",
                        "hipDeviceSynchronize", "hipEventSynchronize", "cuStreamSynchronize", "cuEventSynchronize",
                        "cuCtxSynchronize"})
    EXPECT_TRUE(is_blocking_sync_call(n)) << n;
  for (const char* n : {"cudaStreamWaitEvent", "cudaLaunchKernel", "cudaEventRecord", "cudaStreamQuery"})
    EXPECT_FALSE(is_blocking_sync_call(n)) << n;
  for (const char* n : {"cudaMemcpy", "cudaMemcpy2D", "hipMemcpy", "hipMemcpyWithStream", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"})
    EXPECT_TRUE(is_blocking_memcpy_call(n)) << n;
  for (const char* n : {"cudaMemcpyAsync", "hipMemcpyAsync", "cuMemcpyHtoDAsync_v2", "cudaMemsetAsync", "cudaMemset"})
    EXPECT_FALSE(is_blocking_memcpy_call(n)) << n;
  EXPECT_TRUE(is_memcpy_call("cudaMemcpyAsync"));
  EXPECT_FALSE(is_memcpy_call("cudaMemset"));
}

TEST(TraceIndex, LaunchByDenseCorrelationIdsFirstCallInTimeWins) {
  StoreBuilder b;
  // Two calls carry id 11; the earlier one (t = 5, written second) launched the kernel.
  const size_t late = b.runtime("cudaLaunchKernel", 20, 2, 11);
  const size_t early = b.runtime("cudaLaunchKernel", 5, 2, 11);
  const size_t other = b.runtime("cudaLaunchKernel", 30, 2, 12);
  const size_t k11 = b.kernel("k", 40, 5, 11);
  const size_t k12 = b.kernel("k", 50, 5, 12);
  const size_t k99 = b.kernel("k", 60, 5, 99);  // no call with this id
  TraceIndex idx(b.s);
  EXPECT_EQ(idx.launcher(k11), early);
  EXPECT_EQ(idx.launcher(k12), other);
  EXPECT_EQ(idx.launcher(k99), kNoRow);
  EXPECT_EQ(idx.runtime_of_corr(10), kNoRow);
  EXPECT_EQ(idx.runtime_of_corr(-5), kNoRow);
  (void)late;
}

TEST(TraceIndex, LaunchBySparseCorrelationIds) {
  StoreBuilder b;
  // Ids 10^12 apart: a dense table would need 10^12 slots, so the sorted vector answers.
  const int64_t far = 1'000'000'000'000;
  const size_t r_far = b.runtime("cudaLaunchKernel", 1, 1, far);
  const size_t r_near = b.runtime("cudaLaunchKernel", 2, 1, 3);
  const size_t r_dup = b.runtime("cudaLaunchKernel", 3, 1, far);  // later call, same id: loses
  const size_t k_far = b.kernel("k", 10, 1, far);
  const size_t k_near = b.kernel("k", 11, 1, 3);
  TraceIndex idx(b.s);
  EXPECT_EQ(idx.launcher(k_far), r_far);
  EXPECT_EQ(idx.launcher(k_near), r_near);
  EXPECT_EQ(idx.runtime_of_corr(far + 1), kNoRow);
  (void)r_dup;
}

// The order sort_by_start must produce, computed the obvious way.
std::vector<uint32_t> reference_order(std::vector<uint32_t> rows, const std::vector<int64_t>& ts) {
  std::stable_sort(rows.begin(), rows.end(), [&](uint32_t a, uint32_t b) { return ts[a] < ts[b]; });
  return rows;
}

TEST(TraceIndex, SortByStartMergesRunsAndSortsShuffledLists) {
  std::mt19937 rng(7);
  std::vector<int64_t> ts(20000);
  for (auto& t : ts) t = static_cast<int64_t>(rng() % 5000);  // many equal starts: ties by row
  // Ascending runs (Kineto's per-thread order, per buffer flush), one row list in file order:
  // from a few long runs to hundreds of uneven ones (the merge of their heads).
  std::vector<uint32_t> got;
  for (size_t runs : {2, 5, 40, 331, 2400}) {
    SCOPED_TRACE(runs);
    std::vector<uint32_t> rows(ts.size());
    for (uint32_t i = 0; i < rows.size(); ++i) rows[i] = i;
    std::vector<size_t> cuts{0, rows.size()};
    while (cuts.size() < runs + 1) cuts.push_back(1 + rng() % (rows.size() - 1));
    std::sort(cuts.begin(), cuts.end());
    for (size_t r = 0; r + 1 < cuts.size(); ++r)
      std::sort(rows.begin() + cuts[r], rows.begin() + cuts[r + 1],
                [&](uint32_t a, uint32_t b) { return ts[a] != ts[b] ? ts[a] < ts[b] : a < b; });
    got = rows;
    sort_by_start(got, ts);
    EXPECT_EQ(got, reference_order(rows, ts));
  }
  // A row list out of file order, in many short runs (the key-sort path).
  std::vector<uint32_t> shuffled(ts.size());
  for (uint32_t i = 0; i < shuffled.size(); ++i) shuffled[i] = i;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  got = shuffled;
  sort_by_start(got, ts);
  std::vector<uint32_t> in_row_order(ts.size());
  for (uint32_t i = 0; i < in_row_order.size(); ++i) in_row_order[i] = i;
  EXPECT_EQ(got, reference_order(in_row_order, ts));  // (start, row): the row list's order does not matter
}

// The radix path: lists in file order with many short runs and many equal starts, over spans
// from one value to epoch nanoseconds; against the obvious stable sort.
TEST(TraceIndex, RadixSortByStartKeepsRowOrderForEqualStarts) {
  std::mt19937_64 rng(11);
  for (const int64_t base : {int64_t{0}, int64_t{1'712'195'495'526'803'433}}) {
    for (const uint64_t spread : {uint64_t{1}, uint64_t{3000}, uint64_t{1} << 40}) {
      std::vector<int64_t> ts(30000);
      for (auto& t : ts) t = base + static_cast<int64_t>(rng() % spread);
      std::vector<uint32_t> rows;
      for (uint32_t i = 0; i < ts.size(); i += 1 + rng() % 3) rows.push_back(i);  // ascending, with gaps
      std::vector<uint32_t> got = rows;
      ASSERT_TRUE(radix_sort_by_start(got, ts)) << "spread " << spread;
      EXPECT_EQ(got, reference_order(rows, ts)) << "spread " << spread;
      got = rows;
      sort_by_start(got, ts);  // whichever path it takes, the same order
      EXPECT_EQ(got, reference_order(rows, ts)) << "spread " << spread;
    }
  }
}

// Where the radix path does not apply it says so and leaves the list alone: rows out of file
// order, and starts so far apart that start and position need more than 64 bits.
TEST(TraceIndex, RadixSortByStartDeclinesAndSortByStartStillSorts) {
  std::vector<int64_t> ts = {50, 10, 40, 10, 30};
  std::vector<uint32_t> shuffled = {4, 0, 3, 1, 2};
  std::vector<uint32_t> got = shuffled;
  EXPECT_FALSE(radix_sort_by_start(got, ts));
  EXPECT_EQ(got, shuffled);
  std::vector<int64_t> far = {INT64_MAX, INT64_MIN + 1, 0, -5, 7};
  std::vector<uint32_t> rows = {0, 1, 2, 3, 4};
  got = rows;
  EXPECT_FALSE(radix_sort_by_start(got, far));  // a 64-bit span leaves no bit for positions
  EXPECT_EQ(got, rows);
  sort_by_start(got, far);
  EXPECT_EQ(got, (std::vector<uint32_t>{1, 3, 2, 4, 0}));
  std::vector<uint32_t> empty;
  EXPECT_TRUE(radix_sort_by_start(empty, far));
}

}  // namespace
}  // namespace ts::analysis
