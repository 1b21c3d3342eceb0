// Bound-by per step (step_bound.cpp), collectives (collectives.cpp) and the last arrival at the
// collectives across ranks (multi_trace.cpp), on hand-built traces whose every number is worked
// out by hand in the comments.
#include <gtest/gtest.h>

#include "analysis/passes.h"
#include "analysis/store_builder.h"

namespace ts::analysis {
namespace {

using testing::StoreBuilder;
using trace::Category;

// A cpu_op carrying a collective's parameters, as record_param_comms does.
size_t param_comms(StoreBuilder& b, double ts, double dur, std::string_view name, std::string_view dtype,
                   int64_t in, int64_t out, int group) {
  trace::CommArgs c;
  c.collective = b.id(name);
  c.dtype = b.id(dtype);
  c.in_nelems = in;
  c.out_nelems = out;
  c.group_size = group;
  trace::EventArgs a;
  a.comm = static_cast<uint32_t>(b.s.comm_args.size());
  b.s.comm_args.push_back(c);
  return b.s.add(b.id("record_param_comms"), Category::CpuOp, trace::Phase::Complete, StoreBuilder::kHostPid,
                 StoreBuilder::kHostTid, StoreBuilder::ns(ts), StoreBuilder::ns(dur), trace::kNone, trace::kNone,
                 b.s.add_args(a));
}

// Two steps (µs):
//   ProfilerStep#1 [0, 1000), ProfilerStep#2 [1000, 2400); DataLoader __next__ [0, 300).
//   launch [300,310) -> A gemm [320,700)        launch [400,410) -> D all-reduce [680,760) (stream 20)
//   launch [800,820) -> C [830,900)             launch [1000,1005) -> F [1450,1500)
//   launch [1100,1110) -> E [1150,1400)         launch [1200,1210) -> H [1700,1750)
//   G [1600,1700) with no correlation id (launcher unknown).
// Each step launched 3 events, so neither is dropped; steps are [0,1000) and [1000,2400).
TraceAnalysis two_steps() {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  b.host("ProfilerStep#2", 1000, 1400, Category::UserAnnotation);
  b.host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 300, Category::UserAnnotation);
  b.runtime("cudaLaunchKernel", 300, 10, 1);
  b.kernel("ampere_sgemm_128x64_nn", 320, 380, 1);
  param_comms(b, 395, 25, "allreduce", "Float", 1'000'000, 1'000'000, 4);
  b.runtime("cudaLaunchKernel", 400, 10, 4);
  b.kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", 680, 80, 4, 20);
  b.runtime("cudaLaunchKernel", 800, 20, 3);
  b.kernel("elementwise_kernel", 830, 70, 3);
  b.runtime("cudaLaunchKernel", 1000, 5, 6);
  b.kernel("elementwise_kernel", 1450, 50, 6);
  b.runtime("cudaLaunchKernel", 1100, 10, 5);
  b.kernel("ampere_sgemm_128x64_nn", 1150, 250, 5);
  b.runtime("cudaLaunchKernel", 1200, 10, 7);
  b.kernel("elementwise_kernel", 1700, 50, 7);
  b.kernel("elementwise_kernel", 1600, 100, trace::kNone);
  return analyse(b.s);
}

TEST(StepBound, EveryNsOfEachStepInOneClass) {
  const TraceAnalysis a = two_steps();
  ASSERT_EQ(a.steps.steps.size(), 2u);
  ASSERT_TRUE(a.bound.present);
  const Step& s1 = a.steps.steps[0];
  // Step 1 [0,1000): compute A [320,700) + C [830,900) = 380 + 70 = 450; the all-reduce
  // [680,760) is exposed on [700,760) = 60. Gap [0,320) ends at A, launched at 300 > 0: host
  // [0,300) (inside the DataLoader call: data_loading 300) then launch [300,320) = 20. Gap
  // [760,830) ends at C, launched at 800: cpu 40, launch 30. Gap [900,1150) ends at E,
  // launched at 1100: cpu [900,1100), of which [900,1000) = 100 is in step 1.
  EXPECT_EQ(s1.bound_ns[kBoundGpuCompute], 450 * us);
  EXPECT_EQ(s1.bound_ns[kBoundCommunication], 60 * us);
  EXPECT_EQ(s1.bound_ns[kBoundDataLoading], 300 * us);
  EXPECT_EQ(s1.bound_ns[kBoundCpu], (40 + 100) * us);
  EXPECT_EQ(s1.bound_ns[kBoundLaunch], (20 + 30) * us);
  EXPECT_EQ(s1.bound_ns[kBoundKernelKernel], 0);
  EXPECT_EQ(s1.bound_ns[kBoundUnknown], 0);
  EXPECT_EQ(s1.bound_by, kBoundGpuCompute);
  // Step 2 [1000,2400): compute E 250 + F 50 + G and H [1600,1750) 150 = 450; cpu [1000,1100)
  // = 100 and the trailing gap [1750,2400) = 650; launch [1100,1150) = 50; gap [1400,1450)
  // ends at F, launched at 1000 <= 1400: kernel-kernel 50; gap [1500,1600) ends at G, whose
  // launcher is unknown: 100. 450 + 750 + 50 + 50 + 100 = 1400.
  const Step& s2 = a.steps.steps[1];
  EXPECT_EQ(s2.bound_ns[kBoundGpuCompute], 450 * us);
  EXPECT_EQ(s2.bound_ns[kBoundCommunication], 0);
  EXPECT_EQ(s2.bound_ns[kBoundDataLoading], 0);
  EXPECT_EQ(s2.bound_ns[kBoundCpu], 750 * us);
  EXPECT_EQ(s2.bound_ns[kBoundLaunch], 50 * us);
  EXPECT_EQ(s2.bound_ns[kBoundKernelKernel], 50 * us);
  EXPECT_EQ(s2.bound_ns[kBoundUnknown], 100 * us);
  EXPECT_EQ(s2.bound_by, kBoundCpu);
  for (const Step& st : a.steps.steps) {
    int64_t sum = 0;
    for (int64_t v : st.bound_ns) sum += v;
    EXPECT_EQ(sum, st.duration());
  }
  // Window: compute 900 > cpu 140 + 750 = 890, so the trace is labelled gpu_compute.
  EXPECT_EQ(a.bound.total_ns[kBoundGpuCompute], 900 * us);
  EXPECT_EQ(a.bound.total_ns[kBoundCpu], 890 * us);
  EXPECT_EQ(a.bound.bound_by, kBoundGpuCompute);
  EXPECT_EQ(a.bound.steps_by_label[kBoundGpuCompute], 1);
  EXPECT_EQ(a.bound.steps_by_label[kBoundCpu], 1);
}

TEST(StepBound, NoGpuEventsNoLabel) {
  StoreBuilder b;
  b.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  b.host("aten::mm", 10, 500);
  const TraceAnalysis a = analyse(b.s);
  EXPECT_FALSE(a.bound.present);
  EXPECT_EQ(a.bound.bound_by, -1);
  EXPECT_EQ(a.steps.steps.at(0).bound_by, -1);
}

TEST(Collectives, ParametersFromRecordParamCommsAroundTheLaunch) {
  const TraceAnalysis a = two_steps();
  const CollectiveStats& c = a.collectives;
  ASSERT_EQ(c.rows.size(), 1u);
  const CollectiveRow& r = c.rows[0];
  EXPECT_EQ(r.name, "allreduce");
  EXPECT_EQ(r.dtype, "Float");
  EXPECT_EQ(r.group_size, 4);
  EXPECT_EQ(r.count, 1);
  EXPECT_EQ(r.bytes, 4'000'000);  // 1e6 Float elements x 4 bytes
  EXPECT_EQ(r.time_ns, 80 * us);
  EXPECT_EQ(r.exposed_ns, 60 * us);  // [700,760): the gemm covers [680,700)
  EXPECT_DOUBLE_EQ(r.algbw_gbps, 50.0);   // 4e6 bytes / 80e-6 s = 50e9 B/s
  EXPECT_DOUBLE_EQ(r.busbw_gbps, 75.0);   // x 2(n-1)/n = 2 x 3/4 = 1.5
  EXPECT_EQ(c.exposed_ns, 60 * us);
  EXPECT_EQ(c.exposed_ns, a.bound.total_ns[kBoundCommunication]);
  EXPECT_EQ(c.with_params, 1);
  ASSERT_EQ(c.calls.size(), 1u);
  EXPECT_EQ(c.calls[0].step, 1);  // launched at 400, inside ProfilerStep#1's host interval
  EXPECT_EQ(c.calls[0].ordinal, 0);
}

TEST(Collectives, NameFromTheKernelWhenNothingWasRecorded) {
  EXPECT_EQ(collective_from_kernel_name("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"),
            "sendrecv");
  EXPECT_EQ(collective_from_kernel_name("void ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "allgather");
  EXPECT_EQ(collective_from_kernel_name("ampere_sgemm_128x64_nn"), "");
  EXPECT_EQ(dtype_bytes("BFloat16"), 2);
  EXPECT_EQ(dtype_bytes("Long"), 8);
  EXPECT_EQ(dtype_bytes("Quux"), 0);
  EXPECT_DOUBLE_EQ(bus_factor("allreduce", 8), 1.75);         // 2 x 7/8
  EXPECT_DOUBLE_EQ(bus_factor("_allgather_base", 8), 0.875);  // 7/8
  EXPECT_DOUBLE_EQ(bus_factor("reduce_scatter", 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor("broadcast", 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor("allreduce", -1), 0.0);
}

// Rank r's trace with the given collective calls ((step, ordinal, duration µs), all all-reduces).
TraceAnalysis rank_trace(int rank, const std::vector<std::tuple<int64_t, int32_t, int64_t>>& calls) {
  TraceAnalysis t;
  t.path = "rank" + std::to_string(rank) + ".json";
  t.parallel.rank = rank;
  t.parallel.world_size = 3;
  for (int i = 0; i < 2; ++i) {
    Step st;
    st.number = i + 1;
    st.start_ns = i * 1000 * us;
    st.end_ns = (i + 1) * 1000 * us;
    t.steps.steps.push_back(st);
  }
  t.steps.total_ns = 2000 * us;
  t.steps.median_step_ns = 1000 * us;
  t.collectives.rows.push_back({"allreduce", "Float", 3});
  for (auto [step, ordinal, dur] : calls) {
    CollectiveCall c;
    c.step = step;
    c.ordinal = ordinal;
    c.dur_ns = dur * us;
    t.collectives.calls.push_back(c);
  }
  return t;
}

TEST(CollectiveArrival, TheRankWithTheShortestKernelArrivedLast) {
  // Matched calls (durations in µs, ranks 0/1/2):
  //   step 1 #0: 500 200 400 -> rank 1 last; waits 300, 0, 200
  //   step 1 #1: 100 100 100 -> a tie: nobody last; waits 0
  //   step 2 #0: 300 150 350 -> rank 1 last; waits 150, 0, 200
  //   step 2 #1: only on ranks 0 and 1 -> not matched
  std::vector<TraceAnalysis> v;
  v.push_back(rank_trace(2, {{1, 0, 400}, {1, 1, 100}, {2, 0, 350}}));
  v.push_back(rank_trace(0, {{1, 0, 500}, {1, 1, 100}, {2, 0, 300}, {2, 1, 50}}));
  v.push_back(rank_trace(1, {{1, 0, 200}, {1, 1, 100}, {2, 0, 150}, {2, 1, 50}}));
  const MultiTraceAnalysis m = compare_ranks(std::move(v));
  ASSERT_TRUE(m.one_job);
  EXPECT_EQ(m.arrival.matched_calls, 3);
  EXPECT_EQ(m.arrival.last_rank, 1);
  EXPECT_EQ(m.arrival.last_count, 2);
  // Others' waits where rank 1 was last: (300 + 200) + (150 + 200) = 850 µs, / 2 other ranks
  // / 2 steps = 212.5 µs per step.
  EXPECT_DOUBLE_EQ(m.arrival.others_wait_ns_per_step, 212.5 * us);
  ASSERT_EQ(m.ranks.size(), 3u);
  EXPECT_EQ(m.ranks[0].rank, 0);
  EXPECT_EQ(m.ranks[0].last_arrivals, 0);
  EXPECT_EQ(m.ranks[1].last_arrivals, 2);
  EXPECT_EQ(m.ranks[2].last_arrivals, 0);
  EXPECT_DOUBLE_EQ(m.ranks[0].collective_wait_ns_per_step, 225.0 * us);  // (300 + 150) / 2
  EXPECT_DOUBLE_EQ(m.ranks[1].collective_wait_ns_per_step, 0.0);
  EXPECT_DOUBLE_EQ(m.ranks[2].collective_wait_ns_per_step, 200.0 * us);  // (200 + 200) / 2
}

TEST(CollectiveArrival, NothingMatchedSaysWhy) {
  std::vector<TraceAnalysis> v;
  v.push_back(rank_trace(0, {{1, 0, 500}}));
  v.push_back(rank_trace(1, {{2, 0, 500}}));
  const MultiTraceAnalysis m = compare_ranks(std::move(v));
  EXPECT_EQ(m.arrival.matched_calls, 0);
  EXPECT_EQ(m.arrival.last_rank, -1);
  EXPECT_FALSE(m.arrival.note.empty());
}

}  // namespace
}  // namespace ts::analysis
