// The PlanBuffers view of the device arrays a plan test owns (test_plan_cuda,
// test_route_plan_cuda).
#pragma once

#include <cstdint>

#include "cuda/device_array.h"
#include "cuda/moe_plan.h"

namespace servekit::testing {

inline cuda::PlanBuffers plan_buffers(int groups, DeviceArray<int32_t>& offsets,
                                      DeviceArray<int32_t>& row_token,
                                      DeviceArray<int32_t>& row_group,
                                      DeviceArray<int32_t>& slot_row,
                                      DeviceArray<uint8_t>& scratch) {
  cuda::PlanBuffers plan;
  plan.num_groups = groups;
  plan.group_offsets = offsets.get();
  plan.row_token = row_token.get();
  plan.row_group = row_group.get();
  plan.token_slot_row = slot_row.get();
  plan.scratch = scratch.get();
  return plan;
}

}  // namespace servekit::testing
