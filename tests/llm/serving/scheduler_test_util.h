// scheduler_test_util.h - small helpers of the scheduler's tests.
#pragma once

#include <cstdint>
#include <string>

#include "genesis/error.hpp"
#include "genesis/serving/scheduler.hpp"

namespace scheduler_test {

using genesis::serving::ScheduledChunk;
using genesis::serving::StepPlan;

// The chunk of sequence `seq` in the plan, or null.
inline const ScheduledChunk* chunk_of(const StepPlan& plan, int64_t seq) {
  for (const ScheduledChunk& c : plan.chunks) {
    if (c.seq == seq) return &c;
  }
  return nullptr;
}

// The message of the genesis::Error f() throws, or "(no error)".
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const genesis::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace scheduler_test
