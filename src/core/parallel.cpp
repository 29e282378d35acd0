#include "core/parallel.hpp"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace deepwell::detail {

int cpu_threads() {
  static const int n = [] {
    if (const char* env = std::getenv("DEEPWELL_NUM_THREADS")) {
      int v = std::atoi(env);
      if (v > 0) return std::min(v, 256);
    }
    unsigned hc = std::thread::hardware_concurrency();
    return hc == 0 ? 1 : static_cast<int>(std::min(hc, 256u));
  }();
  return n;
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t min_chunk) {
  if (n <= 0) return;
  int64_t workers = std::min<int64_t>(cpu_threads(), (n + min_chunk - 1) / std::max<int64_t>(min_chunk, 1));
  if (workers <= 1) {
    fn(0, n);
    return;
  }
  // Over-split a little so that uneven chunks (causal rows) balance.
  int64_t chunks = std::min<int64_t>(n, workers * 4);
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> threads;
  threads.reserve(workers);
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (;;) {
      int64_t c = next.fetch_add(1);
      if (c >= chunks) return;
      int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
      try {
        fn(begin, end);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  for (int64_t t = 1; t < workers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace deepwell::detail
