/* Armature from C: skin a body model on the Vulkan backend (or CUDA), then take the exact backward, through the C
 * API alone. Checks itself: for L = Σ x-coordinates of the vertices, dL/dtransl is exactly (V, 0, 0).
 *
 *   skin_c MODEL.npz [vulkan|cuda]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "armature/armature.h"

#define CALL(x)                                                                       \
  do {                                                                                \
    armature_status s_ = (x);                                                         \
    if (s_ != ARMATURE_OK) {                                                          \
      fprintf(stderr, "skin_c: %s failed (%d): %s\n", #x, s_, armature_last_error()); \
      return s_ == ARMATURE_ERROR_UNAVAILABLE ? 77 : 1;                               \
    }                                                                                 \
  } while (0)

typedef struct Job {
  armature_skinning skinning;
  armature_tensor pose, betas, expression, transl, vertices, joints;
  armature_tensor grad_vertices, grad_pose, grad_betas, grad_expression, grad_transl;
} Job;

static armature_status forward_and_backward(void* user, const armature_exec* exec) {
  Job* j = (Job*)user;
  armature_status s = armature_skinning_forward(j->skinning, exec, &j->pose, &j->betas, &j->expression, &j->transl,
                                                &j->vertices, &j->joints);
  if (s != ARMATURE_OK) return s;
  return armature_skinning_backward(j->skinning, exec, &j->pose, &j->grad_vertices, NULL, &j->grad_pose, &j->grad_betas,
                                    &j->grad_expression, &j->grad_transl);
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: skin_c MODEL.npz [vulkan|cuda]\n");
    return 2;
  }
  const armature_backend backend =
      argc == 3 && strcmp(argv[2], "cuda") == 0 ? ARMATURE_BACKEND_CUDA : ARMATURE_BACKEND_VULKAN;
  if (armature_api_version() != ARMATURE_C_API_VERSION) {
    fprintf(stderr, "skin_c: built for C API %d, the library is %u\n", ARMATURE_C_API_VERSION, armature_api_version());
    return 1;
  }
  armature_context context = NULL;
  if (backend == ARMATURE_BACKEND_VULKAN) {
    armature_context_info info = {ARMATURE_STRUCT_CONTEXT_INFO, sizeof info, NULL, 0};
    CALL(armature_context_create(&info, &context));
    char text[2048];
    CALL(armature_context_describe(context, text, sizeof text));
    printf("%s", text);
  }
  armature_device device;
  CALL(armature_device_create(context, &device));
  CALL(armature_device_supports(device, backend));

  armature_skinning_info info = {ARMATURE_STRUCT_SKINNING_INFO, sizeof info, NULL, argv[1], backend, 10, 10, 1};
  Job job;
  CALL(armature_skinning_create(device, &info, &job.skinning));
  uint32_t V = 0, J = 0;
  CALL(armature_skinning_sizes(job.skinning, &V, &J));

  /* Every tensor in a buffer of its own: zeros in, the gradient of Σx in. */
  struct {
    armature_tensor* tensor;
    int64_t shape[3];
    uint32_t rank;
    float fill;
    armature_buffer buffer;
  } parts[] = {{&job.pose, {1, J, 3}, 3, 0.0f},          {&job.betas, {1, 10}, 2, 0.0f},
               {&job.expression, {1, 10}, 2, 0.0f},      {&job.transl, {1, 3}, 2, 0.0f},
               {&job.vertices, {1, V, 3}, 3, NAN},       {&job.joints, {1, J, 3}, 3, NAN},
               {&job.grad_vertices, {1, V, 3}, 3, 0.0f}, {&job.grad_pose, {1, J, 3}, 3, NAN},
               {&job.grad_betas, {1, 10}, 2, NAN},       {&job.grad_expression, {1, 10}, 2, NAN},
               {&job.grad_transl, {1, 3}, 2, NAN}};
  const size_t count = sizeof parts / sizeof parts[0];
  for (size_t i = 0; i < count; ++i) {
    uint64_t n = 1;
    for (uint32_t d = 0; d < parts[i].rank; ++d) n *= (uint64_t)parts[i].shape[d];
    float* values = malloc(n * sizeof(float));
    for (uint64_t k = 0; k < n; ++k) values[k] = parts[i].fill;
    if (parts[i].tensor == &job.grad_vertices)
      for (uint64_t k = 0; k < n; k += 3) values[k] = 1.0f; /* dL/dx = 1 for every vertex */
    CALL(armature_buffer_create(device, ARMATURE_FLOAT32, n, &parts[i].buffer));
    CALL(armature_buffer_upload(parts[i].buffer, values, n * sizeof(float), 0));
    CALL(armature_buffer_tensor(parts[i].buffer, parts[i].rank, parts[i].shape, parts[i].tensor));
    free(values);
  }

  CALL(armature_device_run(device, backend, forward_and_backward, &job));

  float grad[3], first[3];
  CALL(armature_buffer_download(parts[10].buffer, grad, sizeof grad, 0));
  CALL(armature_buffer_download(parts[4].buffer, first, sizeof first, 0));
  printf("vertex 0 at (%.4f, %.4f, %.4f); dL/dtransl = (%.3f, %.3f, %.3f) for V = %u\n", first[0], first[1], first[2],
         grad[0], grad[1], grad[2], V);
  /* fp32 sums of V ones, in a fixed order: exact below 2^24. */
  const int ok = grad[0] == (float)V && grad[1] == 0.0f && grad[2] == 0.0f && isfinite(first[0]);

  /* A bad argument is an error with a message, not a crash. */
  armature_tensor wrong = job.pose;
  wrong.shape[1] = J + 1;
  if (armature_skinning_forward(job.skinning, NULL, &wrong, &job.betas, &job.expression, &job.transl, &job.vertices,
                                &job.joints) == ARMATURE_OK) {
    fprintf(stderr, "skin_c: a NULL exec was accepted\n");
    return 1;
  }
  printf("refused as expected: %s\n", armature_last_error());

  for (size_t i = 0; i < count; ++i) armature_buffer_destroy(parts[i].buffer);
  armature_skinning_destroy(job.skinning);
  armature_device_destroy(device);
  armature_context_destroy(context);
  if (!ok) {
    fprintf(stderr, "skin_c: dL/dtransl is not (V, 0, 0)\n");
    return 1;
  }
  printf("skin_c: ok\n");
  return 0;
}
