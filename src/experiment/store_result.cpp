#include "experiment/store_result.h"

#include <unistd.h>

#include <chrono>
#include <exception>
#include <fmt/format.h>

#ifdef TS_HAVE_STORE
#include "store/store.h"
#endif

namespace ts::experiment {

double unix_now() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

int64_t store_experiment(const std::string& kind, const std::string& command, const std::string& json,
                         double started_unix, double finished_unix) {
#ifdef TS_HAVE_STORE
  try {
    store::Store st(store::Store::default_path());
    store::RunInfo info;
    info.kind = kind;
    info.command = command;
    info.started_unix = started_unix;
    info.root_pid = getpid();
    int64_t id = st.add_run(info);
    st.put_report(id, json);
    st.finish_run(id, finished_unix, 0);
    st.flush();
    return id;
  } catch (const std::exception& e) {
    fmt::print(stderr, "trainscope: warning: result not stored: {}\n", e.what());
    return -1;
  }
#else
  (void)kind, (void)command, (void)json, (void)started_unix, (void)finished_unix;
  return -1;
#endif
}

}  // namespace ts::experiment
