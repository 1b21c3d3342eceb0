// EventStore's thread column: each row's (pid, tid) comes back as written, whatever the mix of
// threads (more distinct pairs than the lookup cache has slots, pairs that share a slot, named
// and negative ids), threads are listed in order of first use, and append_store renumbers a
// piece's threads so that appending pieces gives what one store of all the rows gives.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "trace/event_store.h"

namespace ts::trace {
namespace {

// A pid or tid as a trace writes it: a number, or a name the reader interns ("CPU functions",
// "stream 7"); a name is stored as a named id of its store's string.
struct Id {
  int64_t number = 0;
  std::string name;  // empty: the number
  bool operator==(const Id&) const = default;
};
using Pair = std::pair<Id, Id>;

int64_t stored(EventStore& s, const Id& id) {
  return id.name.empty() ? id.number : EventStore::named_id(s.strings.intern(id.name));
}
Id read_back(const EventStore& s, int64_t v) {
  return EventStore::is_named_id(v) ? Id{0, std::string(s.id_name(v))} : Id{v, {}};
}

// 300 distinct pairs (the cache has 64 slots): processes and GPU devices, threads with
// negative ids (real traces have them), streams, and named ones.
std::vector<Pair> some_threads() {
  std::vector<Pair> v;
  for (int64_t p = 0; p < 5; ++p)
    for (int64_t t = 0; t < 50; ++t) v.push_back({Id{p == 4 ? 25738 : p, {}}, Id{t % 2 ? -247463936 - t : t, {}}});
  for (int i = 0; i < 50; ++i) v.push_back({Id{0, "CPU functions " + std::to_string(i)}, Id{0, "stream " + std::to_string(i)}});
  return v;
}

// Row r's pair, drawn so that runs, alternations and rare pairs all occur.
std::vector<Pair> rows_of(const std::vector<Pair>& threads, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Pair> rows;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t k = rng() % 10;
    if (k < 4 && !rows.empty()) rows.push_back(rows.back());       // a run
    else if (k < 7) rows.push_back(threads[rng() % 3]);             // a few busy threads
    else rows.push_back(threads[rng() % threads.size()]);           // any
  }
  return rows;
}

void add_rows(EventStore& s, const std::vector<Pair>& rows, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i)
    s.add(0, Category::CpuOp, Phase::Complete, stored(s, rows[i].first), stored(s, rows[i].second),
          static_cast<int64_t>(i), 1);
}

TEST(EventStoreThreads, EveryRowGivesBackItsPidAndTid) {
  const std::vector<Pair> threads = some_threads();
  const std::vector<Pair> rows = rows_of(threads, 20'000, 1);
  EventStore s;
  add_rows(s, rows, 0, rows.size());
  ASSERT_EQ(s.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_TRUE(read_back(s, s.pid(i)) == rows[i].first) << "row " << i;
    ASSERT_TRUE(read_back(s, s.tid(i)) == rows[i].second) << "row " << i;
  }
}

TEST(EventStoreThreads, ThreadsAreListedOnceInOrderOfFirstUse) {
  const std::vector<Pair> rows = rows_of(some_threads(), 20'000, 2);
  EventStore s;
  add_rows(s, rows, 0, rows.size());
  std::vector<Pair> expect;
  for (const Pair& p : rows) {
    bool seen = false;
    for (const auto& e : expect) seen |= e == p;
    if (!seen) expect.push_back(p);
  }
  ASSERT_EQ(s.threads.size(), expect.size());
  for (size_t k = 0; k < expect.size(); ++k) {
    EXPECT_TRUE(read_back(s, s.threads[k].pid) == expect[k].first) << "thread " << k;
    EXPECT_TRUE(read_back(s, s.threads[k].tid) == expect[k].second) << "thread " << k;
  }
}

TEST(EventStoreThreads, ClearedStoreStartsItsThreadsAgain) {
  EventStore s;
  s.add(0, Category::CpuOp, Phase::Complete, 7, 8, 0, 1);
  s.add(0, Category::CpuOp, Phase::Complete, 9, 10, 0, 1);
  s.clear_rows();
  s.add(0, Category::CpuOp, Phase::Complete, 9, 10, 0, 1);
  ASSERT_EQ(s.threads.size(), 1u);
  EXPECT_EQ(s.thread[0], 0u);
  EXPECT_EQ(s.pid(0), 9);
  EXPECT_EQ(s.tid(0), 10);
}

TEST(EventStoreThreads, AppendedPiecesEqualOneStore) {
  const std::vector<Pair> rows = rows_of(some_threads(), 12'000, 3);
  EventStore whole;
  add_rows(whole, rows, 0, rows.size());
  EventStore merged;
  for (size_t from = 0; from < rows.size(); from += 1'500) {
    EventStore piece;
    add_rows(piece, rows, from, std::min(rows.size(), from + 1'500));
    append_store(merged, piece);
  }
  ASSERT_EQ(merged.size(), whole.size());
  EXPECT_EQ(merged.thread, whole.thread);
  ASSERT_EQ(merged.threads.size(), whole.threads.size());
  for (size_t k = 0; k < whole.threads.size(); ++k) EXPECT_TRUE(merged.threads[k] == whole.threads[k]);
}

}  // namespace
}  // namespace ts::trace
