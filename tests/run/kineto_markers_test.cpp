// KinetoMarkerFilter on crafted streams, each expected output written out by hand. The marker
// lines are the two PyTorch 2.13.0's CPU wheel printed here for one profiler start and stop
// (libkineto's SyncActivityProfilerHandler.cpp, logged at its USDT severity).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "run/kineto_markers.h"

namespace ts::run {
namespace {

const std::string kStart = "USDT:2026-12-02 11:27:51 6171:6171 SyncActivityProfilerHandler.cpp:52] profiler_start\n";
const std::string kStop = "USDT:2026-12-02 11:27:51 6171:6171 SyncActivityProfilerHandler.cpp:59] profiler_stop\n";

// The stream fed in pieces of `chunk` bytes (0: all at once), then flushed.
std::string filtered(const std::string& in, size_t chunk = 0) {
  KinetoMarkerFilter f;
  std::string out;
  if (chunk == 0) chunk = in.size() ? in.size() : 1;
  for (size_t i = 0; i < in.size(); i += chunk) f.feed(in.data() + i, std::min(chunk, in.size() - i), out);
  f.flush(out);
  return out;
}

TEST(KinetoMarkers, TheMarkerLinesOfAStartAndStopAreTakenOut) {
  for (size_t chunk : {0, 1, 3, 7, 64}) {
    EXPECT_EQ(filtered("step 1\n" + kStart + "step 2\n" + kStop + "step 3\n", chunk), "step 1\nstep 2\nstep 3\n")
        << chunk;
    EXPECT_EQ(filtered(kStart + kStop, chunk), "") << chunk;
  }
}

TEST(KinetoMarkers, KinetosOtherSeveritiesAndTheProgramsOwnLinesPass) {
  const std::string stage = "STAGE:2026-12-02 11:28:01 6257:6257 SyncActivityProfilerHandler.cpp:51] Completed Stage: Warm Up\n";
  const std::string error = "ERROR:2026-12-02 11:28:01 6257:6257 CuptiActivityApi.cpp:100] CUPTI_ERROR_NOT_INITIALIZED\n";
  const std::string own = "USDT: own metric 3\n";
  const std::string sentence = "USDT:2026-12-02 11:27:51 1:1 x.cpp:1] two words\n";
  const std::string no_file = "USDT:2026-12-02 11:27:51 6171:6171 ] profiler_start\n";
  for (size_t chunk : {0, 1, 5}) {
    EXPECT_EQ(filtered(stage + error + own + sentence + no_file, chunk), stage + error + own + sentence + no_file);
    EXPECT_EQ(filtered("US\nUSDT\nUSDTX\n", chunk), "US\nUSDT\nUSDTX\n");
  }
}

TEST(KinetoMarkers, OnlyAWholeLineAtALinesStartIsAMarker) {
  // Mid-line, after a progress bar's carriage return, or in a line another process's bytes broke:
  // not a line of Kineto's.
  EXPECT_EQ(filtered("x " + kStart), "x " + kStart);
  EXPECT_EQ(filtered("bar 1/2\r" + kStart), "bar 1/2\r" + kStart);
  std::string broken = kStart.substr(0, 20) + "rank 1 says hi\n";
  EXPECT_EQ(filtered(broken, 4), broken);
  // Windows-style line end: still Kineto's line.
  EXPECT_EQ(filtered(kStart.substr(0, kStart.size() - 1) + "\r\nnext\n"), "next\n");
}

TEST(KinetoMarkers, ALineHeldAsAPossibleMarkerPassesAtTheEnd) {
  EXPECT_EQ(filtered("done\nUSD"), "done\nUSD");
  std::string partial = kStart.substr(0, kStart.size() - 1);  // no newline yet when the job ended
  EXPECT_EQ(filtered(partial), partial);
  // A held line longer than any marker is let go before its end arrives.
  KinetoMarkerFilter f;
  std::string out, long_line = "USDT:" + std::string(600, 'x');
  f.feed(long_line.data(), long_line.size(), out);
  EXPECT_EQ(out, long_line);
}

TEST(KinetoMarkers, TheLineShape) {
  EXPECT_TRUE(is_kineto_marker_line(kStart));
  EXPECT_TRUE(is_kineto_marker_line(kStop.substr(0, kStop.size() - 1)));
  EXPECT_FALSE(is_kineto_marker_line("USDT:2026-12-02 11:27:51 6171:6171 Sync.cpp:52]profiler_start"));
  EXPECT_FALSE(is_kineto_marker_line("USDT:2026-12-02 11:27:51 6171 Sync.cpp:52] profiler_start"));
  EXPECT_FALSE(is_kineto_marker_line("USDT:26-12-02 11:27:51 6171:6171 Sync.cpp:52] profiler_start"));
  EXPECT_FALSE(is_kineto_marker_line("USDT:2026-12-02 11:27:51 6171:6171 Sync.cpp:x] profiler_start"));
  EXPECT_FALSE(is_kineto_marker_line("USDT:2026-12-02 11:27:51 6171:6171 Sync.cpp:52] "));
}

}  // namespace
}  // namespace ts::run
