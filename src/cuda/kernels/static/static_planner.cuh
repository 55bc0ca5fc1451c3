// The static path's planner, launched when the one-CTA route + plan kernel did not build the
// task list: virtual-expert tasks from the plan's group offsets (CTA 0), and the
// input's preparation (StaticInputPrep: fp8_per_tensor's |x| maxima, fp8_block128's x quantized
// once per token) on CTAs 1 .. input.ctas. The one-CTA route + plan kernel runs the same
// preparation on its extra CTAs (one_cta_plan.cuh), so where it builds the tasks no planner is
// launched. The task list: static_task_build.cuh.
#pragma once

#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/static/static_input_prep.cuh"
#include "cuda/kernels/static/static_params.h"
#include "cuda/kernels/static/static_task_build.cuh"
#include "cuda/kernels/static/static_tasks.h"

namespace servekit::cuda::static_moe {

constexpr int kStaticPlanThreads = kStaticInputPrepThreads;

__global__ void __launch_bounds__(kStaticPlanThreads) static_plan_kernel(const StaticPlanParams p) {
  uint64_t* const stamps = blockIdx.x == 0 ? p.diag_prefix : nullptr;
  static_prefix_stamp(stamps, 0);
  pdl_wait();  // the plan (and x) come from the previous kernels
  pdl_trigger();
  static_prefix_stamp(stamps, 1);
  if (blockIdx.x == 0) {
    static_build_tasks(p.group_offsets, p.num_groups,
                       {p.tasks, p.num_tasks, p.task_capacity, p.partition, {}, nullptr});
    if (stamps != nullptr) {
      __syncthreads();  // every thread's part of the list (uniform: a kernel parameter)
      static_prefix_stamp(stamps, 4);
    }
  } else if (static_cast<int>(blockIdx.x) <= p.input.ctas) {
    static_prepare_input(p.input, static_cast<int>(blockIdx.x) - 1);
  }
}

}  // namespace servekit::cuda::static_moe
