// Sync clustering and memory edge cases on small hand-made traces (times in µs).
#include <gtest/gtest.h>

#include "analysis/passes.h"
#include "analysis/store_builder.h"

namespace ts::analysis {
namespace {

using testing::StoreBuilder;
using trace::Category;
TEST(Syncs, BlockingCopiesZeroLengthCallsAndOrphanSyncEvents) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  b.runtime("cudaMemcpy", 100, 50, 1);  // blocking copy: a sync and a blocking copy call
  b.copy("Memcpy DtoH (Device -> Pageable)", 110, 30, 1, 4096);
  b.runtime("cudaDeviceSynchronize", 200, 0, 2);  // zero-length: still one sync
  b.sync_event("Context Sync", 300, 10, 99);      // no runtime call with corr 99: counts
  b.sync_event("Stream Wait Event", 400, 10, 98); // the host never blocks on it
  b.host("aten::_local_scalar_dense", 500, 20);   // outside any aten::item: counts as .item()
  TraceAnalysis a = analyse(b.s);
  EXPECT_EQ(a.copies.blocking_memcpy_calls, 1);
  EXPECT_EQ(a.syncs.count, 4);  // cudaMemcpy, cudaDeviceSynchronize, Context Sync, _local_scalar_dense
  EXPECT_EQ(a.syncs.time_ns, (50 + 0 + 10 + 20) * us);
  EXPECT_EQ(a.syncs.item_calls, 1);
  EXPECT_EQ(a.syncs.rows.size(), 5u);  // Stream Wait Event is listed, not counted
  EXPECT_EQ(a.steps.steps[0].syncs, 4);
}

TEST(Syncs, OverlappingCallsOnOneThreadAreOneCluster) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  b.host("aten::item", 100, 50);
  b.host("aten::_local_scalar_dense", 101, 48);
  b.runtime("cudaStreamSynchronize", 110, 45, 1);  // sticks out of the item by 5 µs
  b.host("aten::item", 300, 10, Category::CpuOp, /*tid=*/7);  // another thread: its own cluster
  TraceAnalysis a = analyse(b.s);
  EXPECT_EQ(a.syncs.count, 2);
  EXPECT_EQ(a.syncs.time_ns, (55 + 10) * us);
  EXPECT_EQ(a.syncs.item_calls, 2);
}

TEST(Memory, RelativeTotalsFromBytesWhenTheTraceHasNoTotals) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 100, Category::UserAnnotation);
  b.host("ProfilerStep#2", 100, 100, Category::UserAnnotation);
  b.host("ProfilerStep#3", 200, 100, Category::UserAnnotation);
  // 2021-format events: Bytes only (Total Allocated absent = -1).
  b.memory(10, -1, -1, 1000);
  b.memory(50, -1, -1, 500);
  b.memory(60, -1, -1, -500);   // step 1 ends at +1000
  b.memory(150, -1, -1, 1500);  // step 2 ends at +2500
  b.memory(250, -1, -1, 1500);  // step 3 ends at +4000
  b.memory(260, -1, -1, 7, 0, /*device_type=*/0);  // CPU memory: ignored
  TraceAnalysis a = analyse(b.s);
  ASSERT_TRUE(a.memory.present);
  EXPECT_TRUE(a.memory.relative);
  EXPECT_EQ(a.memory.allocated_at_step_end, (std::vector<int64_t>{1000, 2500, 4000}));
  EXPECT_DOUBLE_EQ(a.memory.slope_bytes_per_step, 1500.0);
  EXPECT_EQ(a.memory.peak_allocated, 4000);
  EXPECT_EQ(a.memory.peak_reserved, 0);
}

TEST(Memory, ValueHeldIntoTheWindowCountsForThePeak) {
  StoreBuilder b;
  b.memory(5, 9000, 12000);  // before the steps
  b.host("ProfilerStep#1", 100, 100, Category::UserAnnotation);
  b.memory(150, 4000, 12000);
  TraceAnalysis a = analyse(b.s);
  EXPECT_EQ(a.memory.peak_allocated, 9000);  // held when step 1 began
  EXPECT_EQ(a.memory.allocated_at_step_end, (std::vector<int64_t>{4000}));
  EXPECT_EQ(a.memory.device_total, 0);  // no deviceProperties
}

}  // namespace
}  // namespace ts::analysis
