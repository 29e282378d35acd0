// A minimal parallel-for for the CPU reference backend: splits [0, n) into contiguous chunks over
// std::thread workers. Thread count: DEEPWELL_NUM_THREADS, else hardware_concurrency().
#pragma once

#include <cstdint>
#include <functional>

namespace deepwell::detail {

int cpu_threads();

// Calls fn(begin, end) on disjoint chunks covering [0, n). Exceptions inside fn are rethrown on the
// calling thread after every worker has finished.
void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                  int64_t min_chunk = 1);

}  // namespace deepwell::detail
