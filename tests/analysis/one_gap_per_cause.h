#pragma once
// The small timeline with one idle gap per cause that the idle attribution test checks bucket
// by bucket and the report test renders (times in µs, one host thread, streams 7 and 8).
#include "analysis/store_builder.h"

namespace ts::analysis::testing {

// One step [0,1000) on one thread, one gap per cause:
//   k1 [20,100) launched [10,15)
//   gap A [100,300): DataLoader.__next__ [50,250) -> data_loading 150; aten::add [250,296) ->
//         host_compute 40 until its launch cudaLaunchKernel [290,295) c2 -> launch 5, and the
//         launch's latency [295,300) -> launch 5;            k2 [300,400)
//   gap B [400,600): aten::item [380,420) > cudaStreamSynchronize [385,410) was open when the GPU
//         ran dry: a drain. [400,410) the sync 10, [410,420) aten::item itself 10 (own entry),
//         aten::mul [420,590) + launch [590,595) + latency [595,600) = 180 charged to the sync;
//                                                             k3 [600,700)
//   gap C [700,720) (< 50 µs): aten::relu [695,712) > cudaLaunchKernel [705,711) c4: all 20 launch;
//                                                             k4 [720,740)
//   gap D [740,745): k5 queued at [712,714), 5 µs gap -> gpu_overhead 5;   k5 [745,800)
//   gap E [800,900): k6 (stream 8) queued at [715,717), 100 µs gap, no dependency; its stream
//         had no event ending at 800 (k5 is on stream 7) -> unattributed 100; k6 [900,950)
// idle = span 930 - busy 405 = 525 = 150 + 40 + 10 + 200 + 20 + 5 + 100.
inline void add_one_gap_per_cause(StoreBuilder& b) {
  using trace::Category;
  b.host("ProfilerStep#1", 0, 1000, Category::UserAnnotation);
  b.runtime("cudaLaunchKernel", 10, 5, 1);
  b.kernel("k1", 20, 80, 1);
  b.host("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 50, 200, Category::UserAnnotation);
  b.host("aten::add", 250, 46);
  b.runtime("cudaLaunchKernel", 290, 5, 2);
  b.kernel("k2", 300, 100, 2);
  b.host("aten::item", 380, 40);
  b.runtime("cudaStreamSynchronize", 385, 25, 90);
  b.host("aten::mul", 420, 170);
  b.runtime("cudaLaunchKernel", 590, 5, 3);
  b.kernel("k3", 600, 100, 3);
  b.host("aten::relu", 695, 17);
  b.runtime("cudaLaunchKernel", 705, 6, 4);
  b.kernel("k4", 720, 20, 4);
  b.runtime("cudaLaunchKernel", 712, 2, 5);
  b.kernel("k5", 745, 55, 5);
  b.runtime("cudaLaunchKernel", 715, 2, 6);
  b.kernel("k6", 900, 50, 6, 8);
}

}  // namespace ts::analysis::testing
