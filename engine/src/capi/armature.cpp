// The C API (armature/armature.h) over the C++ one: each function converts its arguments, calls through guard(),
// which turns every exception into a status and this thread's message, and converts back. Nothing here decides
// anything an op does not: shapes are checked by the ops themselves.
#include "armature/armature.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <new>
#include <string>

#include "armature/body/body_model.h"
#include "armature/device.h"
#include "armature/error.h"
#include "armature/ops/adam.h"
#include "armature/ops/axpy.h"
#include "armature/ops/deformable_aggregation.h"
#include "armature/ops/gaussian_field.h"
#include "armature/ops/gaussian_pose.h"
#include "armature/ops/grid_hierarchy.h"
#include "armature/ops/interpolate.h"
#include "armature/ops/joint_propagation.h"
#include "armature/ops/linear_blend_skinning.h"
#include "armature/ops/project.h"
#include "armature/ops/raster.h"
#include "armature/ops/skinning.h"
#include "armature/ops/texture_bake.h"
#include "armature/ops/winding_numbers.h"
#include "armature/read_limits.h"
#include "armature/vk/context.h"
#include "armature/vk/host.h"

using namespace armature;

struct armature_context_t {
  std::unique_ptr<vk::Context> context;
};
struct armature_device_t {
  std::unique_ptr<Device> device;
};
struct armature_buffer_t {
  DeviceBuffer buffer;
};
struct armature_vk_requirements_t {
  std::unique_ptr<vk::DeviceRequirements> requirements;
};
struct armature_feature_maps_t {
  FeatureMapLayout layout;
  uint32_t features = 0;
  std::unique_ptr<DeviceFeatureMaps> maps;  // null: the CPU backend's alone
};
struct armature_skinning_t {
  armature_device_t* device;
  std::unique_ptr<Skinning> skinning;  // null for the CPU backend, which uses `model`
  BodyModel model;
  uint32_t shapeComponents = 0, exprComponents = 0;
  std::optional<BodyParams> last;  // the CPU backend's last forward, which its backward differentiates
};
struct armature_body_model_t {
  BodyModel model;
};
struct armature_grid_hierarchy_t {
  GridHierarchy hierarchy;
};

namespace {
// A body model's array by its file name, with its shape (empty where the file has none).
struct ModelArray {
  std::vector<uint64_t> shape;
  size_t count = 0;
  std::function<void(double*)> copy;
};
ModelArray modelArray(const BodyModel& m, const char* name) {
  ARM_CHECK(name, "name is NULL");
  const uint64_t V = m.vertexCount, J = m.jointCount, A = m.contourAngles, C = m.contourLandmarks;
  const auto of = [](const auto& array, std::vector<uint64_t> shape) {
    return ModelArray{array.empty() ? std::vector<uint64_t>{0} : std::move(shape), array.size(),
                      [&array](double* out) { std::copy(array.begin(), array.end(), out); }};
  };
  const std::string n = name;
  if (n == "v_template") return of(m.vTemplate, {V, 3});
  if (n == "f") return of(m.faces, {m.faceCount, 3});
  if (n == "kintree_parents") return of(m.parents, {J});
  if (n == "J_regressor") return of(m.jRegressor, {J, V});
  if (n == "weights") return of(m.weights, {V, J});
  if (n == "shapedirs") return of(m.shapeDirs, {V, 3, m.shapeCount});
  if (n == "exprdirs") return of(m.exprDirs, {V, 3, m.exprCount});
  if (n == "posedirs") return of(m.poseDirs, {V, 3, m.poseFeatureCount()});
  if (n == "hands_componentsl") return of(m.handsComponentsL, {45, 45});
  if (n == "hands_componentsr") return of(m.handsComponentsR, {45, 45});
  if (n == "hands_meanl") return of(m.handsMeanL, {45});
  if (n == "hands_meanr") return of(m.handsMeanR, {45});
  if (n == "hands_components") return of(m.handComponents, {45, 45});
  if (n == "hands_mean") return of(m.handMean, {45});
  if (n == "lmk_faces_idx") return of(m.lmkFacesIdx, {m.lmkFacesIdx.size()});
  if (n == "lmk_bary_coords") return of(m.lmkBaryCoords, {m.lmkFacesIdx.size(), 3});
  if (n == "dynamic_lmk_faces_idx") return of(m.dynLmkFacesIdx, {A, C});
  if (n == "dynamic_lmk_bary_coords") return of(m.dynLmkBaryCoords, {A, C, 3});
  throw Error("no array '" + n + "' (v_template, f, kintree_parents, J_regressor, weights, shapedirs, exprdirs, " +
              "posedirs, hands_componentsl/r, hands_meanl/r, hands_components, hands_mean, lmk_faces_idx, " +
              "lmk_bary_coords, dynamic_lmk_faces_idx, dynamic_lmk_bary_coords)");
}
}  // namespace

struct armature_joint_forest_t {
  std::unique_ptr<JointForest> forest;
  std::vector<int32_t> pointJoints;
  std::unique_ptr<DeviceJointForest> device;  // null: the CPU backend's alone
};
struct armature_skin_weights_t {
  std::unique_ptr<DeviceSkinWeights> weights;
};
struct armature_triangle_mesh_t {
  std::unique_ptr<DeviceTriangleMesh> mesh;
};

namespace {

thread_local std::string t_lastError;

// A backend or device missing on this machine (not a bad argument): ARMATURE_ERROR_UNAVAILABLE.
struct Unavailable : Error {
  using Error::Error;
};

template <typename Body>
armature_status guard(const char* function, Body&& body) {
  try {
    t_lastError.clear();
    body();
    return ARMATURE_OK;
  } catch (const Unavailable& e) {
    t_lastError = std::string(function) + ": " + e.what();
    return ARMATURE_ERROR_UNAVAILABLE;
  } catch (const Error& e) {
    t_lastError = std::string(function) + ": " + e.what();
    return ARMATURE_ERROR_INVALID_ARGUMENT;
  } catch (const std::bad_alloc&) {
    t_lastError = std::string(function) + ": out of host memory";
    return ARMATURE_ERROR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    t_lastError = std::string(function) + ": " + e.what();
    return ARMATURE_ERROR_INTERNAL;
  } catch (...) {
    t_lastError = std::string(function) + ": an unknown failure";
    return ARMATURE_ERROR_INTERNAL;
  }
}

// A versioned struct: present, of its type, and at least as long as the members this library reads.
template <typename Struct>
void checkStruct(const Struct* s, uint32_t type, const char* name, size_t needed = sizeof(Struct)) {
  ARM_CHECK(s, "%s is NULL", name);
  ARM_CHECK(s->s_type == type, "%s.s_type is %u, expected %u", name, s->s_type, type);
  ARM_CHECK(s->size >= needed, "%s.size is %u, less than the %zu bytes this library reads", name, s->size, needed);
}

template <typename Handle>
Handle& deref(Handle* h, const char* name) {
  ARM_CHECK(h, "%s is NULL", name);
  return *h;
}

ElementType elementTypeOf(armature_dtype d, const char* name) {
  switch (d) {
    case ARMATURE_FLOAT32:
      return ElementType::Float32;
    case ARMATURE_INT32:
      return ElementType::Int32;
    case ARMATURE_UINT32:
      return ElementType::UInt32;
    case ARMATURE_BYTE:
      return ElementType::Byte;
    case ARMATURE_FLOAT64:
      break;  // the CPU backend's: never a device view (viewOf refuses it first)
  }
  throw Error(std::string(name) + ": unknown dtype " + std::to_string(int(d)));
}

Backend backendOf(armature_backend b) {
  ARM_CHECK(b == ARMATURE_BACKEND_VULKAN || b == ARMATURE_BACKEND_CUDA, "unknown backend %d", int(b));
  return b == ARMATURE_BACKEND_VULKAN ? Backend::Vulkan : Backend::Cuda;
}

// A tensor's element count, checked dense row-major.
uint64_t denseCount(const armature_tensor* t, const char* name) {
  ARM_CHECK(t->rank <= ARMATURE_MAX_RANK, "%s: rank %u, at most %d", name, t->rank, ARMATURE_MAX_RANK);
  uint64_t count = 1, expected = 1;
  for (int d = int(t->rank) - 1; d >= 0; --d) {
    ARM_CHECK(t->shape[d] >= 0, "%s: dimension %d is %lld", name, d, (long long)t->shape[d]);
    const bool dense = t->strides[d] == 0 || uint64_t(t->strides[d]) == expected || t->shape[d] == 1;
    ARM_CHECK(dense, "%s: stride %lld of dimension %d is not dense row-major (%llu); make the tensor contiguous", name,
              (long long)t->strides[d], d, (unsigned long long)expected);
    ARM_CHECK(!__builtin_mul_overflow(count, uint64_t(t->shape[d]), &count), "%s: its shape overflows 64 bits", name);
    expected = count;
  }
  // Its bytes too, so that every size an op computes from the view fits (float64 is 8 bytes, a byte 1, the rest 4).
  const uint64_t elementSize = t->dtype == ARMATURE_FLOAT64 ? 8 : t->dtype == ARMATURE_BYTE ? 1 : 4;
  checkedProduct({count, elementSize}, std::string(name) + ": its bytes");
  return count;
}

// A tensor as the view an op takes: dense row-major, its element count checked (and empty for NULL).
DeviceView viewOf(const armature_tensor* t, const char* name) {
  if (!t) return {};
  const uint64_t count = denseCount(t, name);
  ARM_CHECK(t->vk_buffer || t->data, "%s: neither a VkBuffer nor a CUDA pointer", name);
  ARM_CHECK(t->dtype != ARMATURE_FLOAT64, "%s: float64 is the CPU backend's (the GPU backends compute in float32)",
            name);
  DeviceView v;
  v.vkBuffer = reinterpret_cast<VkBuffer>(t->vk_buffer);
  v.cudaBase = t->data;
  v.offset = t->data ? 0 : size_t(t->offset);
  v.count = size_t(count);
  v.type = elementTypeOf(t->dtype, name);
  return v;
}

// A tensor's dimension d as a uint32 size, named in the message when it is missing or too large.
uint32_t dim(const armature_tensor* t, uint32_t rank, uint32_t d, const char* name) {
  ARM_CHECK(t, "%s is NULL", name);
  ARM_CHECK(t->rank == rank, "%s has rank %u, expected %u", name, t->rank, rank);
  ARM_CHECK(t->shape[d] >= 0 && t->shape[d] <= int64_t(UINT32_MAX), "%s: dimension %u is %lld", name, d,
            (long long)t->shape[d]);
  return uint32_t(t->shape[d]);
}

// ---- the CPU backend: the double references on host memory ----

bool onCpu(const armature_exec* e) { return e && e->backend == ARMATURE_BACKEND_CPU; }

// A CPU tensor's host memory: `count` elements of `dtype` (NULL → none).
template <typename T>
std::span<T> hostSpan(const armature_tensor* t, const char* name, armature_dtype dtype) {
  if (!t) return {};
  const uint64_t count = denseCount(t, name);
  ARM_CHECK(t->dtype == dtype, "%s: the CPU backend takes %s here, got dtype %d", name,
            dtype == ARMATURE_FLOAT64 ? "float64" : "int32", int(t->dtype));
  ARM_CHECK(t->data || count == 0, "%s: no host memory (data is NULL)", name);
  ARM_CHECK(!t->vk_buffer, "%s: a VkBuffer, but the CPU backend reads host memory", name);
  return {static_cast<T*>(t->data), size_t(count)};
}
std::vector<double> hostIn(const armature_tensor* t, const char* name) {
  const std::span<double> s = hostSpan<double>(t, name, ARMATURE_FLOAT64);
  return {s.begin(), s.end()};
}
// Writes `values` into an output tensor (NULL: not wanted) that holds exactly as many.
void hostOut(const armature_tensor* t, const char* name, const std::vector<double>& values) {
  const std::span<double> s = hostSpan<double>(t, name, ARMATURE_FLOAT64);
  if (!t) return;
  ARM_CHECK(s.size() == values.size(), "%s holds %zu values; the output has %zu", name, s.size(), values.size());
  std::copy(values.begin(), values.end(), s.begin());
}
std::vector<int32_t> hostInts(const armature_tensor* t, const char* name) {
  const std::span<int32_t> s = hostSpan<int32_t>(t, name, ARMATURE_INT32);
  return {s.begin(), s.end()};
}
// The rasteriser's reference rasterises float32 positions, as every backend does: float64 ones are rounded.
std::vector<float> hostFloats(const armature_tensor* t, const char* name) {
  const std::vector<double> d = hostIn(t, name);
  return {d.begin(), d.end()};
}

// `b` as a backend, or Unavailable where this device cannot run it.
Backend requireBackend(armature_device_t& device, armature_backend b) {
  const Backend backend = backendOf(b);
  if (auto why = device.device->unavailable(backend))
    throw Unavailable(std::string(backendName(backend)) + ": " + *why);
  return backend;
}

Exec execOf(armature_device_t& device, const armature_exec* e) {
  ARM_CHECK(e, "exec is NULL");
  ARM_CHECK(e->backend != ARMATURE_BACKEND_CPU,
            "this op has no CPU backend (its reference is C++: the ...Ref function)");
  const Backend backend = requireBackend(device, e->backend);
  if (backend == Backend::Cuda) return Exec::cuda(e->cuda_stream);
  ARM_CHECK(e->command_buffer, "exec.command_buffer is 0 for the Vulkan backend");
  return Exec::vulkan(*device.device->vulkan(), reinterpret_cast<VkCommandBuffer>(e->command_buffer));
}

}  // namespace

extern "C" {

const char* armature_last_error(void) { return t_lastError.c_str(); }
uint32_t armature_api_version(void) { return ARMATURE_C_API_VERSION; }

armature_status armature_context_create(const armature_context_info* info, armature_context* out) {
  return guard("armature_context_create", [&] {
    checkStruct(info, ARMATURE_STRUCT_CONTEXT_INFO, "info");
    ARM_CHECK(out, "out is NULL");
    vk::ContextOptions options;
    options.validation = info->validation != 0;
    auto handle = std::make_unique<armature_context_t>();
    try {
      handle->context = std::make_unique<vk::Context>(options);
    } catch (const Error& e) {  // no loader, no driver, no usable device
      throw Unavailable(e.what());
    }
    *out = handle.release();
  });
}

armature_status armature_context_attach(const armature_host_device* host, armature_context* out) {
  return guard("armature_context_attach", [&] {
    checkStruct(host, ARMATURE_STRUCT_HOST_DEVICE, "host");
    ARM_CHECK(out, "out is NULL");
    vk::HostDevice h;
    h.instance = reinterpret_cast<VkInstance>(host->instance);
    h.physicalDevice = reinterpret_cast<VkPhysicalDevice>(host->physical_device);
    h.device = reinterpret_cast<VkDevice>(host->device);
    h.queueFamily = host->queue_family;
    h.queue = reinterpret_cast<VkQueue>(host->queue);
    h.getInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(host->get_instance_proc_addr);
    h.allocator = static_cast<const VkAllocationCallbacks*>(host->allocator);
    h.pipelineCache = reinterpret_cast<VkPipelineCache>(host->pipeline_cache);
    h.apiVersion = host->api_version;
    ARM_CHECK(host->extension_count == 0 || host->extensions, "host.extensions is NULL with %u extensions",
              host->extension_count);
    for (uint32_t i = 0; i < host->extension_count; ++i) {
      ARM_CHECK(host->extensions[i], "host.extensions[%u] is NULL", i);
      h.extensions.emplace_back(host->extensions[i]);
    }
    h.features = static_cast<const VkPhysicalDeviceFeatures2*>(host->features);
    if (host->submit) {
      const armature_submit_fn submit = host->submit;
      void* user = host->submit_user;
      h.submit = [submit, user](VkQueue queue, uint32_t count, const VkSubmitInfo* submits, VkFence fence) {
        return VkResult(
            submit(user, reinterpret_cast<uint64_t>(queue), count, submits, reinterpret_cast<uint64_t>(fence)));
      };
    }
    auto handle = std::make_unique<armature_context_t>();
    handle->context = std::make_unique<vk::Context>(h);
    *out = handle.release();
  });
}

void armature_context_destroy(armature_context context) {
  guard("armature_context_destroy", [&] { delete context; });
}

armature_status armature_context_validation_messages(armature_context context, uint32_t* count) {
  return guard("armature_context_validation_messages", [&] {
    ARM_CHECK(count, "count is NULL");
    *count = deref(context, "context").context->validationMessageCount();
  });
}

armature_status armature_context_describe(armature_context context, char* text, size_t capacity) {
  return guard("armature_context_describe", [&] {
    const std::string s = vk::describeContext(*deref(context, "context").context);
    ARM_CHECK(text && capacity > s.size(), "text holds %zu bytes; the description needs %zu", capacity, s.size() + 1);
    std::memcpy(text, s.c_str(), s.size() + 1);
  });
}

uint32_t armature_vk_required_api_version(void) { return vk::kRequiredApiVersion; }

armature_status armature_vk_requirements_create(uint64_t instance, uint64_t physical_device,
                                                void* get_instance_proc_addr, armature_vk_requirements* out) {
  return guard("armature_vk_requirements_create", [&] {
    ARM_CHECK(out, "out is NULL");
    auto handle = std::make_unique<armature_vk_requirements_t>();
    handle->requirements = std::make_unique<vk::DeviceRequirements>(
        reinterpret_cast<VkInstance>(instance), reinterpret_cast<VkPhysicalDevice>(physical_device),
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(get_instance_proc_addr));
    if (!handle->requirements->unsupported().empty()) throw Error(handle->requirements->unsupported());
    *out = handle.release();
  });
}

armature_status armature_vk_requirements_extensions(armature_vk_requirements req, uint32_t* count,
                                                    const char* const** names) {
  return guard("armature_vk_requirements_extensions", [&] {
    ARM_CHECK(count && names, "count or names is NULL");
    const auto& list = deref(req, "req").requirements->extensions();
    *count = uint32_t(list.size());
    *names = list.data();
  });
}

armature_status armature_vk_requirements_add_features(armature_vk_requirements req, void* features2) {
  return guard("armature_vk_requirements_add_features", [&] {
    ARM_CHECK(features2, "features2 is NULL");
    deref(req, "req").requirements->addFeatures(*static_cast<VkPhysicalDeviceFeatures2*>(features2));
  });
}

void armature_vk_requirements_destroy(armature_vk_requirements req) {
  guard("armature_vk_requirements_destroy", [&] { delete req; });
}

armature_status armature_device_create(armature_context context, armature_device* out) {
  return guard("armature_device_create", [&] {
    ARM_CHECK(out, "out is NULL");
    auto handle = std::make_unique<armature_device_t>();
    handle->device = std::make_unique<Device>(context ? context->context.get() : nullptr);
    *out = handle.release();
  });
}

void armature_device_destroy(armature_device device) {
  guard("armature_device_destroy", [&] { delete device; });
}

armature_status armature_device_supports(armature_device device, armature_backend backend) {
  return guard("armature_device_supports", [&] { requireBackend(deref(device, "device"), backend); });
}

armature_status armature_buffer_create(armature_device device, armature_dtype dtype, uint64_t count,
                                       armature_buffer* out) {
  return guard("armature_buffer_create", [&] {
    ARM_CHECK(out, "out is NULL");
    auto handle = std::make_unique<armature_buffer_t>();
    handle->buffer = deref(device, "device").device->allocate(elementTypeOf(dtype, "dtype"), size_t(count));
    *out = handle.release();
  });
}

armature_status armature_buffer_adopt(armature_device device, const armature_host_allocation* host,
                                      armature_dtype dtype, uint64_t count, armature_buffer* out) {
  return guard("armature_buffer_adopt", [&] {
    ARM_CHECK(out, "out is NULL");
    const armature_host_allocation& h = deref(host, "host");
    auto handle = std::make_unique<armature_buffer_t>();
    handle->buffer = deref(device, "device")
                         .device->adopt({.buffer = reinterpret_cast<VkBuffer>(h.buffer),
                                         .memory = reinterpret_cast<VkDeviceMemory>(h.memory),
                                         .allocationSize = h.allocation_size,
                                         .offset = h.offset,
                                         .dedicated = h.dedicated != 0},
                                        elementTypeOf(dtype, "dtype"), size_t(count));
    *out = handle.release();
  });
}

void armature_buffer_destroy(armature_buffer buffer) {
  guard("armature_buffer_destroy", [&] { delete buffer; });
}

armature_status armature_buffer_upload(armature_buffer buffer, const void* data, uint64_t bytes, uint64_t offset) {
  return guard("armature_buffer_upload", [&] {
    ARM_CHECK(data || bytes == 0, "data is NULL");
    deref(buffer, "buffer").buffer.upload(data, size_t(bytes), size_t(offset));
  });
}

armature_status armature_buffer_download(armature_buffer buffer, void* data, uint64_t bytes, uint64_t offset) {
  return guard("armature_buffer_download", [&] {
    ARM_CHECK(data || bytes == 0, "data is NULL");
    deref(buffer, "buffer").buffer.download(data, size_t(bytes), size_t(offset));
  });
}

armature_status armature_buffer_tensor(armature_buffer buffer, uint32_t rank, const int64_t* shape,
                                       armature_tensor* out) {
  return guard("armature_buffer_tensor", [&] {
    ARM_CHECK(out && (shape || rank == 0), "out or shape is NULL");
    ARM_CHECK(rank <= ARMATURE_MAX_RANK, "rank %u, at most %d", rank, ARMATURE_MAX_RANK);
    const DeviceView v = deref(buffer, "buffer").buffer.view();
    armature_tensor t{};
    t.vk_buffer = reinterpret_cast<uint64_t>(v.vkBuffer);
    t.offset = v.offset;
    t.data = v.cuda<char>();
    t.dtype = armature_dtype(int(v.type));
    t.rank = rank;
    uint64_t count = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      ARM_CHECK(shape[d] >= 0 && !__builtin_mul_overflow(count, uint64_t(shape[d]), &count),
                "shape[%u] = %lld is negative or overflows", d, (long long)shape[d]);
      t.shape[d] = shape[d];
    }
    ARM_CHECK(count <= v.count, "a shape of %llu elements on a buffer of %zu", (unsigned long long)count, v.count);
    *out = t;
  });
}

armature_status armature_device_run(armature_device device, armature_backend backend, armature_work_fn work,
                                    void* user) {
  return guard("armature_device_run", [&] {
    ARM_CHECK(work, "work is NULL");
    armature_device_t& d = deref(device, "device");
    d.device->run(backendOf(backend), [&](const Exec& exec) {
      armature_exec e{backend, reinterpret_cast<uint64_t>(exec.commandBuffer()), exec.stream()};
      if (work(user, &e) != ARMATURE_OK) throw Error(std::string("the work failed: ") + t_lastError);
    });
  });
}

armature_status armature_barrier(armature_device device, const armature_exec* exec) {
  return guard("armature_barrier", [&] { execOf(deref(device, "device"), exec).barrier(); });
}

armature_status armature_axpy(armature_device device, const armature_exec* exec, float a, const armature_tensor* x,
                              const armature_tensor* y) {
  return guard("armature_axpy", [&] {
    axpy(execOf(deref(device, "device"), exec), {.a = a, .x = viewOf(x, "x"), .y = viewOf(y, "y")});
  });
}

armature_status armature_skinning_create(armature_device device, const armature_skinning_info* info,
                                         armature_skinning* out) {
  return guard("armature_skinning_create", [&] {
    checkStruct(info, ARMATURE_STRUCT_SKINNING_INFO, "info", offsetof(armature_skinning_info, v_template));
    ARM_CHECK(out && info->model_path, "out or info.model_path is NULL");
    BodyModel model = loadBodyModel(info->model_path);
    if (info->size >= sizeof(armature_skinning_info) && info->v_template) {  // smplx's v_template
      const double* v = info->v_template;
      ARM_CHECK(std::all_of(v, v + model.vTemplate.size(), [](double x) { return std::isfinite(x); }),
                "info.v_template has a value that is not finite");
      model.vTemplate.assign(v, v + model.vTemplate.size());
    }
    if (info->backend == ARMATURE_BACKEND_CPU) {
      auto handle = std::make_unique<armature_skinning_t>();
      handle->model = std::move(model);
      ARM_CHECK(
          info->shape_components <= handle->model.shapeCount && info->expression_components <= handle->model.exprCount,
          "%u shape and %u expression components; the model has %u and %u", info->shape_components,
          info->expression_components, handle->model.shapeCount, handle->model.exprCount);
      handle->shapeComponents = info->shape_components, handle->exprComponents = info->expression_components;
      *out = handle.release();
      return;
    }
    armature_device_t& d = deref(device, "device");
    const Backend backend = requireBackend(d, info->backend);
    auto handle = std::make_unique<armature_skinning_t>();
    handle->device = &d;
    handle->skinning = std::make_unique<Skinning>(*d.device, backend, model, info->shape_components,
                                                  info->expression_components, info->max_batch);
    *out = handle.release();
  });
}

void armature_skinning_destroy(armature_skinning skinning) {
  guard("armature_skinning_destroy", [&] { delete skinning; });
}

armature_status armature_skinning_sizes(armature_skinning skinning, uint32_t* vertices, uint32_t* joints) {
  return guard("armature_skinning_sizes", [&] {
    const armature_skinning_t& s = deref(skinning, "skinning");
    if (vertices) *vertices = s.skinning ? s.skinning->dims().vertexCount : s.model.vertexCount;
    if (joints) *joints = s.skinning ? s.skinning->dims().jointCount : s.model.jointCount;
  });
}

namespace {
// The batch of a (B, …) tensor.
uint32_t batchOf(const armature_tensor* t, const char* name) {
  ARM_CHECK(t && t->rank >= 1 && t->shape[0] >= 0 && t->shape[0] <= int64_t(UINT32_MAX), "%s: no batch dimension",
            name);
  return uint32_t(t->shape[0]);
}
// The CPU backend's parameters: betas and expression as many columns as their tensors have (B,S) (B,E), within
// what the handle allows.
BodyParams hostBodyParams(const armature_skinning_t& s, const armature_tensor* pose, const armature_tensor* betas,
                          const armature_tensor* expression, const armature_tensor* transl) {
  const uint32_t B = batchOf(pose, "pose");
  const auto columns = [&](const armature_tensor* t, const char* name, uint32_t most) -> uint32_t {
    if (!t) return 0;
    ARM_CHECK(t->rank == 2 && t->shape[0] == B, "%s: (B,%s) with B = %u", name, name, B);
    ARM_CHECK(t->shape[1] <= int64_t(most), "%s has %lld columns; the skinning allows %u", name, (long long)t->shape[1],
              most);
    return uint32_t(t->shape[1]);
  };
  BodyParams p{.batch = B,
               .shapeComponents = columns(betas, "betas", s.shapeComponents),
               .exprComponents = columns(expression, "expression", s.exprComponents),
               .pose = hostIn(pose, "pose"),
               .betas = hostIn(betas, "betas"),
               .expression = hostIn(expression, "expression"),
               .transl = hostIn(transl, "transl")};
  if (p.transl.empty()) p.transl.assign(size_t(B) * 3, 0.0);
  validateBodyParams(s.model, p);
  return p;
}
}  // namespace

armature_status armature_skinning_forward(armature_skinning skinning, const armature_exec* exec,
                                          const armature_tensor* pose, const armature_tensor* betas,
                                          const armature_tensor* expression, const armature_tensor* transl,
                                          const armature_tensor* vertices, const armature_tensor* joints) {
  return guard("armature_skinning_forward", [&] {
    armature_skinning_t& s = deref(skinning, "skinning");
    if (onCpu(exec) || !s.skinning) {
      ARM_CHECK(onCpu(exec) && !s.skinning, "the skinning was made for another backend than exec's");
      s.last = hostBodyParams(s, pose, betas, expression, transl);
      const BodyOutput o = bodyForwardRef(s.model, *s.last);
      hostOut(vertices, "vertices", o.vertices);
      return hostOut(joints, "joints", o.joints);
    }
    s.skinning->forward(execOf(*s.device, exec), {.batch = batchOf(pose, "pose"),
                                                  .pose = viewOf(pose, "pose"),
                                                  .betas = viewOf(betas, "betas"),
                                                  .expression = viewOf(expression, "expression"),
                                                  .transl = viewOf(transl, "transl"),
                                                  .vertices = viewOf(vertices, "vertices"),
                                                  .joints = viewOf(joints, "joints")});
  });
}

armature_status armature_skinning_backward(armature_skinning skinning, const armature_exec* exec,
                                           const armature_tensor* pose, const armature_tensor* grad_vertices,
                                           const armature_tensor* grad_joints, const armature_tensor* grad_pose,
                                           const armature_tensor* grad_betas, const armature_tensor* grad_expression,
                                           const armature_tensor* grad_transl) {
  return guard("armature_skinning_backward", [&] {
    armature_skinning_t& s = deref(skinning, "skinning");
    if (onCpu(exec) || !s.skinning) {
      ARM_CHECK(onCpu(exec) && !s.skinning, "the skinning was made for another backend than exec's");
      ARM_CHECK(s.last && s.last->batch == batchOf(pose, "pose"), "no forward of this batch to differentiate");
      s.last->pose = hostIn(pose, "pose");
      const BodyGrads g =
          bodyBackwardRef(s.model, *s.last, hostIn(grad_vertices, "grad_vertices"), hostIn(grad_joints, "grad_joints"));
      hostOut(grad_pose, "grad_pose", g.pose);
      hostOut(grad_betas, "grad_betas", g.betas);
      hostOut(grad_expression, "grad_expression", g.expression);
      return hostOut(grad_transl, "grad_transl", g.transl);
    }
    s.skinning->backward(execOf(*s.device, exec), {.batch = batchOf(pose, "pose"),
                                                   .pose = viewOf(pose, "pose"),
                                                   .gradVertices = viewOf(grad_vertices, "grad_vertices"),
                                                   .gradJoints = viewOf(grad_joints, "grad_joints"),
                                                   .gradPose = viewOf(grad_pose, "grad_pose"),
                                                   .gradBetas = viewOf(grad_betas, "grad_betas"),
                                                   .gradExpression = viewOf(grad_expression, "grad_expression"),
                                                   .gradTransl = viewOf(grad_transl, "grad_transl")});
  });
}

namespace {
GaussianFieldInputs gaussianInputsOf(const armature_gaussian_field_inputs* in) {
  ARM_CHECK(in && in->x && in->means && in->cholesky && in->weights, "in, or one of its tensors, is NULL");
  ARM_CHECK(in->x->rank == 2 && in->means->rank == 2 && in->cholesky->rank == 2 && in->weights->rank == 2,
            "x, means, cholesky and weights are each of rank 2");
  ARM_CHECK(in->cholesky->shape[1] == 6 || in->cholesky->shape[1] == 1,
            "cholesky is (N,%lld): (N,6) anisotropic or (N,1) isotropic", (long long)in->cholesky->shape[1]);
  ARM_CHECK(in->x->shape[0] <= int64_t(UINT32_MAX) && in->means->shape[0] <= int64_t(UINT32_MAX) &&
                in->weights->shape[1] <= int64_t(UINT32_MAX),
            "x, means or weights: past 2^32 rows or channels");
  return {.shape = in->cholesky->shape[1] == 6 ? GaussianShape::Anisotropic : GaussianShape::Isotropic,
          .points = uint32_t(in->x->shape[0]),
          .gaussians = uint32_t(in->means->shape[0]),
          .channels = uint32_t(in->weights->shape[1]),
          .x = viewOf(in->x, "x"),
          .means = viewOf(in->means, "means"),
          .cholesky = viewOf(in->cholesky, "cholesky"),
          .weights = viewOf(in->weights, "weights")};
}

GaussianFieldRef hostField(const armature_gaussian_field_inputs* in) {
  ARM_CHECK(in && in->x && in->means && in->cholesky && in->weights, "in, or one of its tensors, is NULL");
  ARM_CHECK(!in->grid, "the CPU backend evaluates the field dense: grid must be NULL");
  ARM_CHECK(in->cholesky->rank == 2 && (in->cholesky->shape[1] == 6 || in->cholesky->shape[1] == 1),
            "cholesky: (N,6) anisotropic or (N,1) isotropic");
  return {.shape = in->cholesky->shape[1] == 6 ? GaussianShape::Anisotropic : GaussianShape::Isotropic,
          .channels = dim(in->weights, 2, 1, "weights"),
          .points = hostIn(in->x, "x"),
          .means = hostIn(in->means, "means"),
          .cholesky = hostIn(in->cholesky, "cholesky"),
          .weights = hostIn(in->weights, "weights")};
}
}  // namespace

armature_status armature_gaussian_field_scratch(uint32_t points, uint32_t gaussians, uint32_t channels, int backward,
                                                uint64_t* floats) {
  return guard("armature_gaussian_field_scratch", [&] {
    ARM_CHECK(floats, "floats is NULL");
    *floats = gaussianFieldScratchFloats(points, gaussians, channels, backward != 0);
  });
}

armature_status armature_gaussian_grid_words(uint32_t points, uint32_t gaussians, uint64_t* words) {
  return guard("armature_gaussian_grid_words", [&] {
    ARM_CHECK(words, "words is NULL");
    *words = gaussianGridWords(points, gaussians);
  });
}

armature_status armature_build_gaussian_grid(armature_device device, const armature_exec* exec,
                                             const armature_gaussian_field_inputs* in, float epsilon,
                                             const armature_tensor* grid) {
  return guard("armature_build_gaussian_grid", [&] {
    buildGaussianGrid(execOf(deref(device, "device"), exec),
                      {.in = gaussianInputsOf(in), .epsilon = epsilon, .grid = viewOf(grid, "grid")});
  });
}

armature_status armature_gaussian_field(armature_device device, const armature_exec* exec,
                                        const armature_gaussian_field_inputs* in, const armature_tensor* field,
                                        const armature_tensor* scratch) {
  return guard("armature_gaussian_field", [&] {
    if (onCpu(exec)) return hostOut(field, "field", gaussianFieldRef(hostField(in)).field);
    gaussianField(execOf(deref(device, "device"), exec), {.in = gaussianInputsOf(in),
                                                          .field = viewOf(field, "field"),
                                                          .scratch = viewOf(scratch, "scratch"),
                                                          .grid = viewOf(in->grid, "grid")});
  });
}

armature_status armature_gaussian_field_backward(armature_device device, const armature_exec* exec,
                                                 const armature_gaussian_field_inputs* in,
                                                 const armature_tensor* grad_field, const armature_tensor* grad_points,
                                                 const armature_tensor* grad_means,
                                                 const armature_tensor* grad_cholesky,
                                                 const armature_tensor* grad_weights, const armature_tensor* scratch) {
  return guard("armature_gaussian_field_backward", [&] {
    if (onCpu(exec)) {
      const GaussianFieldGradsRef g = gaussianFieldBackwardRef(hostField(in), hostIn(grad_field, "grad_field"));
      hostOut(grad_points, "grad_points", g.points);
      hostOut(grad_means, "grad_means", g.means);
      hostOut(grad_cholesky, "grad_cholesky", g.cholesky);
      hostOut(grad_weights, "grad_weights", g.weights);
      return;
    }
    gaussianFieldBackward(execOf(deref(device, "device"), exec),
                          {.in = gaussianInputsOf(in),
                           .gradField = viewOf(grad_field, "grad_field"),
                           .gradPoints = viewOf(grad_points, "grad_points"),
                           .gradMeans = viewOf(grad_means, "grad_means"),
                           .gradCholesky = viewOf(grad_cholesky, "grad_cholesky"),
                           .gradWeights = viewOf(grad_weights, "grad_weights"),
                           .scratch = viewOf(scratch, "scratch"),
                           .grid = viewOf(in->grid, "grid")});
  });
}

namespace {

DeformableAggregationSizes aggregationSizesOf(const armature_tensor* features, const armature_tensor* locations,
                                              const armature_tensor* weights) {
  return {.batch = dim(features, 3, 0, "features"),
          .features = dim(features, 3, 1, "features"),
          .channels = dim(features, 3, 2, "features"),
          .anchors = dim(locations, 5, 1, "locations"),
          .points = dim(locations, 5, 2, "locations"),
          .groups = dim(weights, 6, 5, "weights")};
}

DeformableAggregationInputs aggregationInputsOf(armature_feature_maps maps, const armature_tensor* features,
                                                const armature_tensor* locations, const armature_tensor* weights) {
  const armature_feature_maps_t& handle = deref(maps, "maps");
  ARM_CHECK(handle.maps, "the feature maps were made without a device: they serve the CPU backend alone");
  const DeformableAggregationSizes sizes = aggregationSizesOf(features, locations, weights);
  return {.maps = handle.maps.get(),
          .sizes = sizes,
          .features = viewOf(features, "features"),
          .locations = viewOf(locations, "locations"),
          .weights = viewOf(weights, "weights")};
}

DeformableAggregationRef hostAggregation(armature_feature_maps maps, const armature_tensor* features,
                                         const armature_tensor* locations, const armature_tensor* weights) {
  return {.sizes = aggregationSizesOf(features, locations, weights),
          .layout = deref(maps, "maps").layout,
          .features = hostIn(features, "features"),
          .locations = hostIn(locations, "locations"),
          .weights = hostIn(weights, "weights")};
}

RasterDesc rasterDescOf(const armature_raster_desc* d) {
  ARM_CHECK(d, "desc is NULL");
  return {.width = d->width,
          .height = d->height,
          .useDepthPrior = d->use_depth_prior != 0,
          .occlusionTruncation = d->occlusion_truncation,
          .images = d->images,
          .batch = d->ranges ? RasterBatch::Ranges : RasterBatch::Instanced,
          .scratchCall = d->scratch_call};
}

// Vertices per image (instanced, (B,N,4)) or in all (ranges, (N,4)).
uint32_t vertexCountOf(const RasterDesc& d, const armature_tensor* positions) {
  return d.batch == RasterBatch::Instanced ? dim(positions, 3, 1, "positions") : dim(positions, 2, 0, "positions");
}

InterpolateDesc interpolateDescOf(const armature_tensor* attr, const armature_tensor* findices,
                                  const armature_tensor* faces) {
  ARM_CHECK(attr && (attr->rank == 2 || attr->rank == 3), "attr: (N,C) or (B,N,C)");
  const uint64_t B = dim(findices, 3, 0, "findices"), H = dim(findices, 3, 1, "findices"),
                 W = dim(findices, 3, 2, "findices");
  ARM_CHECK(B * H * W <= UINT32_MAX, "findices: %llu pixels, past 2^32", (unsigned long long)(B * H * W));
  const bool perImage = attr->rank == 3;
  return {.pixels = uint32_t(B * H * W),
          .channels = dim(attr, attr->rank, attr->rank - 1, "attr"),
          .vertexCount = dim(attr, attr->rank, attr->rank - 2, "attr"),
          .faceCount = dim(faces, 2, 0, "faces"),
          .imagePixels = perImage ? uint32_t(H * W) : 0u};
}

}  // namespace

namespace {
ProjectDesc projectDescOf(const armature_tensor* points, const armature_tensor* matrices) {
  ARM_CHECK(points && (points->rank == 2 || points->rank == 3), "points: (N,3) or (B,N,3)");
  const bool perView = points->rank == 3;
  return {.views = dim(matrices, 2, 0, "matrices"),
          .points = dim(points, points->rank, perView ? 1 : 0, "points"),
          .pointsPerView = perView};
}
}  // namespace

armature_status armature_project(armature_device device, const armature_exec* exec, const armature_tensor* points,
                                 const armature_tensor* matrices, const armature_tensor* clip) {
  return guard("armature_project", [&] {
    project(execOf(deref(device, "device"), exec), {.desc = projectDescOf(points, matrices),
                                                    .points = viewOf(points, "points"),
                                                    .matrices = viewOf(matrices, "matrices"),
                                                    .clip = viewOf(clip, "clip")});
  });
}

armature_status armature_project_backward(armature_device device, const armature_exec* exec,
                                          const armature_tensor* points, const armature_tensor* matrices,
                                          const armature_tensor* grad_clip, const armature_tensor* grad_points,
                                          const armature_tensor* grad_matrices) {
  return guard("armature_project_backward", [&] {
    const Exec e = execOf(deref(device, "device"), exec);
    const ProjectDesc desc = projectDescOf(points, matrices);
    projectBackward(e, {.desc = desc,
                        .gradClip = viewOf(grad_clip, "grad_clip"),
                        .matrices = viewOf(matrices, "matrices"),
                        .gradPoints = viewOf(grad_points, "grad_points")});
    if (grad_matrices)
      projectMatrixGrad(e, {.desc = desc,
                            .points = viewOf(points, "points"),
                            .gradClip = viewOf(grad_clip, "grad_clip"),
                            .gradMatrices = viewOf(grad_matrices, "grad_matrices")});
  });
}

armature_status armature_feature_maps_create(armature_device device, uint32_t cameras, uint32_t levels,
                                             const int32_t* spatial_shape, const int32_t* scale_start_index,
                                             uint32_t features, armature_feature_maps* out) {
  return guard("armature_feature_maps_create", [&] {
    ARM_CHECK(out && spatial_shape && scale_start_index, "out, spatial_shape or scale_start_index is NULL");
    ARM_CHECK(uint64_t(cameras) * levels <= 4096, "%u cameras × %u levels: at most 4096 maps", cameras, levels);
    const size_t maps = size_t(cameras) * levels;
    FeatureMapLayout layout{.cameras = cameras,
                            .levels = levels,
                            .spatialShape = std::vector<int32_t>(spatial_shape, spatial_shape + maps * 2),
                            .scaleStartIndex = std::vector<int32_t>(scale_start_index, scale_start_index + maps)};
    auto handle = std::make_unique<armature_feature_maps_t>();
    validateFeatureMapLayout(layout, features);
    if (device) handle->maps = std::make_unique<DeviceFeatureMaps>(*device->device, layout, features);
    handle->layout = std::move(layout), handle->features = features;
    *out = handle.release();
  });
}

void armature_feature_maps_destroy(armature_feature_maps maps) {
  guard("armature_feature_maps_destroy", [&] { delete maps; });
}

armature_status armature_deformable_aggregation(armature_device device, const armature_exec* exec,
                                                armature_feature_maps maps, const armature_tensor* features,
                                                const armature_tensor* locations, const armature_tensor* weights,
                                                const armature_tensor* out) {
  return guard("armature_deformable_aggregation", [&] {
    if (onCpu(exec))
      return hostOut(out, "out", deformableAggregationRef(hostAggregation(maps, features, locations, weights)));
    deformableAggregation(execOf(deref(device, "device"), exec),
                          {.in = aggregationInputsOf(maps, features, locations, weights), .out = viewOf(out, "out")});
  });
}

armature_status armature_deformable_aggregation_scratch(armature_feature_maps maps, const armature_tensor* features,
                                                        const armature_tensor* locations,
                                                        const armature_tensor* weights, uint64_t* words) {
  return guard("armature_deformable_aggregation_scratch", [&] {
    ARM_CHECK(words, "words is NULL");
    const DeformableAggregationInputs in = aggregationInputsOf(maps, features, locations, weights);
    *words = deformableAggregationScratchWords(in.sizes, in.maps->layout().cameras, in.maps->layout().levels);
  });
}

armature_status armature_deformable_aggregation_backward(
    armature_device device, const armature_exec* exec, armature_feature_maps maps, const armature_tensor* features,
    const armature_tensor* locations, const armature_tensor* weights, const armature_tensor* grad_out,
    const armature_tensor* grad_features, const armature_tensor* grad_locations, const armature_tensor* grad_weights,
    const armature_tensor* scratch) {
  return guard("armature_deformable_aggregation_backward", [&] {
    if (onCpu(exec)) {
      const DeformableAggregationGradsRef g = deformableAggregationBackwardRef(
          hostAggregation(maps, features, locations, weights), hostIn(grad_out, "grad_out"));
      hostOut(grad_features, "grad_features", g.features);
      hostOut(grad_locations, "grad_locations", g.locations);
      hostOut(grad_weights, "grad_weights", g.weights);
      return;
    }
    deformableAggregationBackward(execOf(deref(device, "device"), exec),
                                  {.in = aggregationInputsOf(maps, features, locations, weights),
                                   .gradOut = viewOf(grad_out, "grad_out"),
                                   .gradFeatures = viewOf(grad_features, "grad_features"),
                                   .gradLocations = viewOf(grad_locations, "grad_locations"),
                                   .gradWeights = viewOf(grad_weights, "grad_weights"),
                                   .scratch = viewOf(scratch, "scratch")});
  });
}

armature_status armature_raster_scratch_bytes(const armature_raster_desc* desc, uint64_t* bytes) {
  return guard("armature_raster_scratch_bytes", [&] {
    ARM_CHECK(bytes, "bytes is NULL");
    const RasterDesc d = rasterDescOf(desc);
    checkRasterDesc(d);
    *bytes = rasterScratchBytes(d);
  });
}

armature_status armature_rasterize(armature_device device, const armature_exec* exec, const armature_raster_desc* desc,
                                   const armature_tensor* positions, const armature_tensor* faces,
                                   const armature_tensor* depth_prior, const armature_tensor* ranges,
                                   const armature_tensor* scratch, const armature_tensor* findices,
                                   const armature_tensor* barycentrics) {
  return guard("armature_rasterize", [&] {
    const RasterDesc d = rasterDescOf(desc);
    if (onCpu(exec)) {
      const RasterResult r = rasterizeRef(hostFloats(positions, "positions"), hostInts(faces, "faces"), d,
                                          hostFloats(depth_prior, "depth_prior"), hostInts(ranges, "ranges"));
      const std::span<int32_t> ids = hostSpan<int32_t>(findices, "findices", ARMATURE_INT32);
      ARM_CHECK(findices && ids.size() == r.findices.size(), "findices holds %zu values; the output has %zu",
                ids.size(), r.findices.size());
      std::copy(r.findices.begin(), r.findices.end(), ids.begin());
      return hostOut(barycentrics, "barycentrics", {r.barycentrics.begin(), r.barycentrics.end()});
    }
    rasterize(execOf(deref(device, "device"), exec), {.desc = d,
                                                      .vertexCount = vertexCountOf(d, positions),
                                                      .faceCount = dim(faces, 2, 0, "faces"),
                                                      .positions = viewOf(positions, "positions"),
                                                      .faces = viewOf(faces, "faces"),
                                                      .depthPrior = viewOf(depth_prior, "depth_prior"),
                                                      .ranges = viewOf(ranges, "ranges"),
                                                      .scratch = viewOf(scratch, "scratch"),
                                                      .findices = viewOf(findices, "findices"),
                                                      .barycentrics = viewOf(barycentrics, "barycentrics")});
  });
}

armature_status armature_rasterize_backward(armature_device device, const armature_exec* exec,
                                            const armature_raster_desc* desc, const armature_tensor* positions,
                                            const armature_tensor* faces, const armature_tensor* findices,
                                            const armature_tensor* grad_barycentrics,
                                            const armature_tensor* grad_positions) {
  return guard("armature_rasterize_backward", [&] {
    const RasterDesc d = rasterDescOf(desc);
    if (onCpu(exec))
      return hostOut(
          grad_positions, "grad_positions",
          rasterizeBackwardRef(hostFloats(positions, "positions"), hostInts(faces, "faces"), d,
                               hostInts(findices, "findices"), hostIn(grad_barycentrics, "grad_barycentrics")));
    rasterizeBackward(execOf(deref(device, "device"), exec),
                      {.desc = d,
                       .vertexCount = vertexCountOf(d, positions),
                       .faceCount = dim(faces, 2, 0, "faces"),
                       .positions = viewOf(positions, "positions"),
                       .faces = viewOf(faces, "faces"),
                       .findices = viewOf(findices, "findices"),
                       .gradBarycentrics = viewOf(grad_barycentrics, "grad_barycentrics"),
                       .gradPositions = viewOf(grad_positions, "grad_positions")});
  });
}

armature_status armature_interpolate(armature_device device, const armature_exec* exec, const armature_tensor* attr,
                                     const armature_tensor* findices, const armature_tensor* barycentrics,
                                     const armature_tensor* faces, const armature_tensor* out) {
  return guard("armature_interpolate", [&] {
    if (onCpu(exec)) {
      const InterpolateDesc d = interpolateDescOf(attr, findices, faces);
      return hostOut(out, "out",
                     interpolateRef(hostIn(attr, "attr"), d.channels, hostInts(findices, "findices"),
                                    hostIn(barycentrics, "barycentrics"), hostInts(faces, "faces"), d.imagePixels));
    }
    interpolate(execOf(deref(device, "device"), exec), {.desc = interpolateDescOf(attr, findices, faces),
                                                        .attr = viewOf(attr, "attr"),
                                                        .findices = viewOf(findices, "findices"),
                                                        .barycentrics = viewOf(barycentrics, "barycentrics"),
                                                        .faces = viewOf(faces, "faces"),
                                                        .out = viewOf(out, "out")});
  });
}

armature_status armature_interpolate_backward(armature_device device, const armature_exec* exec,
                                              const armature_tensor* attr, const armature_tensor* findices,
                                              const armature_tensor* barycentrics, const armature_tensor* faces,
                                              const armature_tensor* grad_out, const armature_tensor* grad_attr,
                                              const armature_tensor* grad_barycentrics) {
  return guard("armature_interpolate_backward", [&] {
    if (onCpu(exec)) {
      const InterpolateDesc d = interpolateDescOf(attr, findices, faces);
      std::vector<double> gradAttr, gradBary;
      interpolateBackwardRef(hostIn(attr, "attr"), d.channels, hostInts(findices, "findices"),
                             hostIn(barycentrics, "barycentrics"), hostInts(faces, "faces"),
                             hostIn(grad_out, "grad_out"), gradAttr, gradBary, d.imagePixels);
      std::vector<double> accumulated = hostIn(grad_attr, "grad_attr");  // accumulated into, as on the GPU
      ARM_CHECK(!grad_attr || accumulated.size() == gradAttr.size(), "grad_attr holds %zu values; attr has %zu",
                accumulated.size(), gradAttr.size());
      for (size_t i = 0; i < accumulated.size(); ++i) accumulated[i] += gradAttr[i];
      hostOut(grad_attr, "grad_attr", accumulated);
      return hostOut(grad_barycentrics, "grad_barycentrics", gradBary);
    }
    interpolateBackward(execOf(deref(device, "device"), exec),
                        {.desc = interpolateDescOf(attr, findices, faces),
                         .attr = viewOf(attr, "attr"),
                         .findices = viewOf(findices, "findices"),
                         .barycentrics = viewOf(barycentrics, "barycentrics"),
                         .faces = viewOf(faces, "faces"),
                         .gradOut = viewOf(grad_out, "grad_out"),
                         .gradAttr = viewOf(grad_attr, "grad_attr"),
                         .gradBarycentrics = viewOf(grad_barycentrics, "grad_barycentrics")});
  });
}

// ---- joint propagation, linear blend skinning, posed Gaussians --------------------------------------------------

}  // extern "C"

namespace {
// `count` values at `p` (NULL only when count is 0).
template <typename T>
std::vector<T> arrayOf(const T* p, uint64_t count, const char* name) {
  ARM_CHECK(p || count == 0, "%s is NULL with %llu values", name, (unsigned long long)count);
  return count ? std::vector<T>(p, p + count) : std::vector<T>{};
}

uint64_t product(uint64_t a, uint64_t b, const char* name) {
  uint64_t n = 0;
  ARM_CHECK(!__builtin_mul_overflow(a, b, &n), "%s: its size overflows 64 bits", name);
  return n;
}

LocalTransform kindOf(const armature_joint_locals& l) {
  ARM_CHECK(l.kind == ARMATURE_LOCAL_RIGID || l.kind == ARMATURE_LOCAL_AFFINE,
            "locals.kind %d is neither rigid nor affine", int(l.kind));
  return l.kind == ARMATURE_LOCAL_RIGID ? LocalTransform::Rigid : LocalTransform::Affine;
}
// The batch: the first dimension of the rotations (rigid) or the affine transforms.
// The forest's device side, for the GPU backends.
const DeviceJointForest* gpuForest(armature_joint_forest forest) {
  const armature_joint_forest_t& f = deref(forest, "forest");
  ARM_CHECK(f.device, "the forest was made without a device: it serves the CPU backend alone");
  return f.device.get();
}
JointLocalsRef hostLocals(const armature_joint_forest_t& f, const armature_joint_locals& l, uint32_t batch,
                          const armature_tensor* points) {
  return {.batch = batch,
          .kind = kindOf(l),
          .rotations = hostIn(l.rotations, "locals.rotations"),
          .translations = hostIn(l.translations, "locals.translations"),
          .affine = hostIn(l.affine, "locals.affine"),
          .inverseBind = hostIn(l.inverse_bind, "locals.inverse_bind"),
          .pointJoints = f.pointJoints,
          .points = hostIn(points, "points")};
}
uint32_t localsBatch(const armature_joint_locals& l) {
  return kindOf(l) == LocalTransform::Rigid ? batchOf(l.rotations, "locals.rotations")
                                            : batchOf(l.affine, "locals.affine");
}
// The forward's or backward's arguments with the locals' members filled in.
template <typename Args>
Args withLocals(Args args, const armature_joint_locals& l) {
  args.batch = localsBatch(l), args.kind = kindOf(l);
  args.rotations = viewOf(l.rotations, "locals.rotations");
  args.translations = viewOf(l.translations, "locals.translations");
  args.affine = viewOf(l.affine, "locals.affine");
  args.inverseBind = viewOf(l.inverse_bind, "locals.inverse_bind");
  return args;
}
}  // namespace

extern "C" {

armature_status armature_joint_forest_create(armature_device device, uint32_t joints, const int32_t* parents,
                                             uint32_t points, const int32_t* point_joints, armature_joint_forest* out) {
  return guard("armature_joint_forest_create", [&] {
    ARM_CHECK(out, "out is NULL");
    auto handle = std::make_unique<armature_joint_forest_t>();
    handle->forest = std::make_unique<JointForest>(arrayOf(parents, joints, "parents"));
    handle->pointJoints = arrayOf(point_joints, points, "point_joints");
    for (size_t i = 0; i < handle->pointJoints.size(); ++i)
      ARM_CHECK(handle->pointJoints[i] >= 0 && uint32_t(handle->pointJoints[i]) < joints,
                "point_joints[%zu] is %d, not a joint of the %u", i, handle->pointJoints[i], joints);
    if (device)
      handle->device = std::make_unique<DeviceJointForest>(*device->device, *handle->forest, handle->pointJoints);
    *out = handle.release();
  });
}

void armature_joint_forest_destroy(armature_joint_forest forest) {
  guard("armature_joint_forest_destroy", [&] { delete forest; });
}

armature_status armature_joint_forest_scratch(armature_joint_forest forest, uint32_t batch, uint64_t* floats) {
  return guard("armature_joint_forest_scratch", [&] {
    ARM_CHECK(floats, "floats is NULL");
    const armature_joint_forest_t& f = deref(forest, "forest");
    *floats = f.device ? f.device->scratchFloats(batch) : 0;
  });
}

armature_status armature_joint_propagation(armature_device device, const armature_exec* exec,
                                           armature_joint_forest forest, const armature_joint_locals* locals,
                                           const armature_tensor* points, const armature_tensor* globals,
                                           const armature_tensor* skinning, const armature_tensor* positions,
                                           const armature_tensor* points_out, const armature_tensor* scratch) {
  return guard("armature_joint_propagation", [&] {
    const armature_joint_locals& l = deref(locals, "locals");
    if (onCpu(exec)) {
      const armature_joint_forest_t& f = deref(forest, "forest");
      const JointGlobalsRef g = propagateJointsRef(*f.forest, hostLocals(f, l, localsBatch(l), points));
      hostOut(globals, "globals", g.globals);
      hostOut(skinning, "skinning", g.skinning);
      hostOut(positions, "positions", g.positions);
      hostOut(points_out, "points_out", g.points);
      return;
    }
    propagateJoints(execOf(deref(device, "device"), exec),
                    withLocals(JointPropagationArgs{.forest = gpuForest(forest),
                                                    .globals = viewOf(globals, "globals"),
                                                    .skinning = viewOf(skinning, "skinning"),
                                                    .positions = viewOf(positions, "positions"),
                                                    .points = viewOf(points, "points"),
                                                    .pointsOut = viewOf(points_out, "points_out"),
                                                    .scratch = viewOf(scratch, "scratch")},
                               l));
  });
}

armature_status armature_joint_propagation_backward(
    armature_device device, const armature_exec* exec, armature_joint_forest forest,
    const armature_joint_locals* locals, const armature_tensor* points, const armature_tensor* globals,
    const armature_tensor* grad_globals, const armature_tensor* grad_skinning, const armature_tensor* grad_positions,
    const armature_tensor* grad_points_out, const armature_tensor* adjoint, const armature_tensor* scratch,
    const armature_tensor* grad_rotations, const armature_tensor* grad_translations, const armature_tensor* grad_affine,
    const armature_tensor* grad_points) {
  return guard("armature_joint_propagation_backward", [&] {
    const armature_joint_locals& l = deref(locals, "locals");
    if (onCpu(exec)) {
      const armature_joint_forest_t& f = deref(forest, "forest");
      const JointLocalsRef in = hostLocals(f, l, localsBatch(l), points);
      const JointLocalGradsRef g = propagateJointsBackwardRef(*f.forest, in,
                                                              {.globals = hostIn(grad_globals, "grad_globals"),
                                                               .skinning = hostIn(grad_skinning, "grad_skinning"),
                                                               .positions = hostIn(grad_positions, "grad_positions"),
                                                               .points = hostIn(grad_points_out, "grad_points_out")});
      hostOut(grad_rotations, "grad_rotations", g.rotations);
      hostOut(grad_translations, "grad_translations", g.translations);
      hostOut(grad_affine, "grad_affine", g.affine);
      hostOut(grad_points, "grad_points", g.points);
      return;
    }
    propagateJointsBackward(
        execOf(deref(device, "device"), exec),
        withLocals(JointPropagationBackwardArgs{.forest = gpuForest(forest),
                                                .globals = viewOf(globals, "globals"),
                                                .points = viewOf(points, "points"),
                                                .gradGlobals = viewOf(grad_globals, "grad_globals"),
                                                .gradSkinning = viewOf(grad_skinning, "grad_skinning"),
                                                .gradPositions = viewOf(grad_positions, "grad_positions"),
                                                .gradPointsOut = viewOf(grad_points_out, "grad_points_out"),
                                                .adjoint = viewOf(adjoint, "adjoint"),
                                                .scratch = viewOf(scratch, "scratch"),
                                                .gradRotations = viewOf(grad_rotations, "grad_rotations"),
                                                .gradTranslations = viewOf(grad_translations, "grad_translations"),
                                                .gradAffine = viewOf(grad_affine, "grad_affine"),
                                                .gradPoints = viewOf(grad_points, "grad_points")},
                   l));
  });
}

armature_status armature_skin_weights_create(armature_device device, uint32_t joint_count, uint32_t influences,
                                             uint32_t vertices, const uint32_t* joints, const float* weights,
                                             armature_skin_weights* out) {
  return guard("armature_skin_weights_create", [&] {
    ARM_CHECK(out, "out is NULL");
    armature_device_t& d = deref(device, "device");
    const uint64_t n = product(vertices, influences, "joints");
    auto handle = std::make_unique<armature_skin_weights_t>();
    handle->weights = std::make_unique<DeviceSkinWeights>(*d.device, joint_count, influences,
                                                          arrayOf(joints, n, "joints"), arrayOf(weights, n, "weights"));
    *out = handle.release();
  });
}

void armature_skin_weights_destroy(armature_skin_weights weights) {
  guard("armature_skin_weights_destroy", [&] { delete weights; });
}

armature_status armature_linear_blend_skinning(armature_device device, const armature_exec* exec,
                                               armature_skin_weights weights, const armature_tensor* rest,
                                               const armature_tensor* skinning, const armature_tensor* positions) {
  return guard("armature_linear_blend_skinning", [&] {
    linearBlendSkinning(execOf(deref(device, "device"), exec), {.weights = deref(weights, "weights").weights.get(),
                                                                .batch = batchOf(skinning, "skinning"),
                                                                .rest = viewOf(rest, "rest"),
                                                                .skinning = viewOf(skinning, "skinning"),
                                                                .positions = viewOf(positions, "positions")});
  });
}

armature_status armature_pose_gaussians(armature_device device, const armature_exec* exec,
                                        const armature_tensor* transforms, const armature_tensor* gaussian_joints,
                                        const armature_tensor* means, const armature_tensor* cholesky,
                                        const float* post, const armature_tensor* posed_means,
                                        const armature_tensor* posed_cholesky) {
  return guard("armature_pose_gaussians", [&] {
    GaussianPoseArgs args{.gaussians = dim(gaussian_joints, 1, 0, "gaussian_joints"),
                          .joints = dim(transforms, 2, 0, "transforms"),
                          .transforms = viewOf(transforms, "transforms"),
                          .gaussianJoints = viewOf(gaussian_joints, "gaussian_joints"),
                          .means = viewOf(means, "means"),
                          .cholesky = viewOf(cholesky, "cholesky"),
                          .posedMeans = viewOf(posed_means, "posed_means"),
                          .posedCholesky = viewOf(posed_cholesky, "posed_cholesky")};
    if (post) std::copy(post, post + 12, args.post.begin());
    poseGaussians(execOf(deref(device, "device"), exec), args);
  });
}

// ---- meshes, texture baking, optimisation ---------------------------------------------------------------------

armature_status armature_triangle_mesh_create(armature_device device, uint32_t vertices, const float* positions,
                                              uint32_t faces, const int32_t* indices, armature_triangle_mesh* out) {
  return guard("armature_triangle_mesh_create", [&] {
    ARM_CHECK(out, "out is NULL");
    armature_device_t& d = deref(device, "device");
    auto handle = std::make_unique<armature_triangle_mesh_t>();
    handle->mesh =
        std::make_unique<DeviceTriangleMesh>(*d.device, arrayOf(positions, uint64_t(vertices) * 3, "positions"),
                                             arrayOf(indices, uint64_t(faces) * 3, "indices"));
    *out = handle.release();
  });
}

void armature_triangle_mesh_destroy(armature_triangle_mesh mesh) {
  guard("armature_triangle_mesh_destroy", [&] { delete mesh; });
}

armature_status armature_winding_numbers(armature_device device, const armature_exec* exec, armature_triangle_mesh mesh,
                                         const armature_tensor* x, const armature_tensor* windings,
                                         const armature_tensor* distances) {
  return guard("armature_winding_numbers", [&] {
    windingNumbers(execOf(deref(device, "device"), exec), {.mesh = deref(mesh, "mesh").mesh.get(),
                                                           .points = dim(x, 2, 0, "x"),
                                                           .x = viewOf(x, "x"),
                                                           .windings = viewOf(windings, "windings"),
                                                           .distances = viewOf(distances, "distances")});
  });
}

armature_status armature_bake_samples(armature_device device, const armature_exec* exec, const armature_bake_desc* desc,
                                      const armature_tensor* positions, const armature_tensor* faces,
                                      const armature_tensor* texel_faces, const armature_tensor* texel_bary,
                                      const armature_tensor* view_faces, const armature_tensor* view_bary,
                                      const armature_tensor* matrices, const armature_tensor* locations,
                                      const armature_tensor* weights) {
  return guard("armature_bake_samples", [&] {
    const armature_bake_desc& d = deref(desc, "desc");
    bakeSamples(execOf(deref(device, "device"), exec), {.desc = {.texels = d.texels,
                                                                 .views = d.views,
                                                                 .width = d.width,
                                                                 .height = d.height,
                                                                 .vertexCount = d.vertices,
                                                                 .faceCount = d.faces,
                                                                 .tolerance = d.tolerance,
                                                                 .minCosine = d.min_cosine,
                                                                 .sharpness = d.sharpness},
                                                        .positions = viewOf(positions, "positions"),
                                                        .faces = viewOf(faces, "faces"),
                                                        .texelFaces = viewOf(texel_faces, "texel_faces"),
                                                        .texelBary = viewOf(texel_bary, "texel_bary"),
                                                        .viewFaces = viewOf(view_faces, "view_faces"),
                                                        .viewBary = viewOf(view_bary, "view_bary"),
                                                        .matrices = viewOf(matrices, "matrices"),
                                                        .locations = viewOf(locations, "locations"),
                                                        .weights = viewOf(weights, "weights")});
  });
}

armature_status armature_adam_step(armature_device device, const armature_exec* exec,
                                   const armature_adam_settings* settings, uint32_t step, const armature_tensor* params,
                                   const armature_tensor* grads, const armature_tensor* m, const armature_tensor* v) {
  return guard("armature_adam_step", [&] {
    const armature_adam_settings& s = deref(settings, "settings");
    adamStep(execOf(deref(device, "device"), exec),
             {.params = viewOf(params, "params"),
              .grads = viewOf(grads, "grads"),
              .m = viewOf(m, "m"),
              .v = viewOf(v, "v"),
              .settings = {.lr = s.lr, .beta1 = s.beta1, .beta2 = s.beta2, .eps = s.eps},
              .step = step});
  });
}

// ---- body models -------------------------------------------------------------------------------------------------

armature_status armature_body_model_load(const char* path, armature_body_model* out) {
  return guard("armature_body_model_load", [&] {
    ARM_CHECK(out && path, "out or path is NULL");
    auto handle = std::make_unique<armature_body_model_t>();
    handle->model = loadBodyModel(path);
    *out = handle.release();
  });
}

void armature_body_model_destroy(armature_body_model model) {
  guard("armature_body_model_destroy", [&] { delete model; });
}

armature_status armature_body_model_info_get(armature_body_model model, armature_body_model_info* out) {
  return guard("armature_body_model_info_get", [&] {
    ARM_CHECK(out, "out is NULL");
    const BodyModel& m = deref(model, "model").model;
    *out = {.vertices = m.vertexCount,
            .faces = m.faceCount,
            .joints = m.jointCount,
            .shape_count = m.shapeCount,
            .expression_count = m.exprCount,
            .hand_pca = m.hasHandPca() ? 1u : 0u,
            .landmarks = uint32_t(m.lmkFacesIdx.size())};
  });
}

armature_status armature_body_model_array(armature_body_model model, const char* name, double* values, uint64_t count) {
  return guard("armature_body_model_array", [&] {
    const ModelArray a = modelArray(deref(model, "model").model, name);
    ARM_CHECK(count == a.count, "%s has %zu values; count is %llu", name, a.count, (unsigned long long)count);
    ARM_CHECK(values || count == 0, "values is NULL");
    a.copy(values);
  });
}

armature_status armature_body_model_array_shape(armature_body_model model, const char* name, uint32_t* rank,
                                                uint64_t shape[4]) {
  return guard("armature_body_model_array_shape", [&] {
    ARM_CHECK(rank && shape, "rank or shape is NULL");
    const ModelArray a = modelArray(deref(model, "model").model, name);
    *rank = uint32_t(a.shape.size());
    std::fill(shape, shape + 4, 0);
    std::copy(a.shape.begin(), a.shape.end(), shape);
  });
}

armature_status armature_grid_hierarchy_build(armature_backend backend, const armature_grid_view* views,
                                              uint32_t view_count, uint32_t channels, int32_t levels,
                                              int32_t resolution, armature_grid_hierarchy* out) {
  return guard("armature_grid_hierarchy_build", [&] {
    ARM_CHECK(out && (views || view_count == 0), "out or views is NULL");
    ARM_CHECK(view_count == 3, "build_hierarchy takes three axis views, got %u", view_count);
    ARM_CHECK(backend == ARMATURE_BACKEND_CPU || backend == ARMATURE_BACKEND_CUDA,
              "the grid hierarchy runs on the CPU or CUDA backend (%d)", int(backend));
    std::vector<GridView> in(view_count);
    for (uint32_t v = 0; v < view_count; ++v) {
      const armature_grid_view& g = views[v];
      const uint64_t pixels = checkedProduct({g.layers, g.height, g.width}, "a view's layers × height × width");
      ARM_CHECK(pixels <= (uint64_t(1) << 28), "view %u: %llu pixels; at most 2^28", v, (unsigned long long)pixels);
      ARM_CHECK(g.positions && g.normals && (channels == 0 || g.features),
                "view %u: positions, normals or features "
                "is NULL",
                v);
      in[v].layers = g.layers, in[v].height = g.height, in[v].width = g.width;
      in[v].positions.assign(g.positions, g.positions + pixels * 4);
      in[v].normals.assign(g.normals, g.normals + pixels * 3);
      if (channels) {
        ARM_CHECK(channels <= 4096, "%u feature channels; at most 4096", channels);
        in[v].features.assign(g.features, g.features + pixels * channels);
      }
    }
    auto h = std::make_unique<armature_grid_hierarchy_t>();
    h->hierarchy =
        buildGridHierarchy(backend == ARMATURE_BACKEND_CUDA ? Backend::Cuda : Backend::Cpu, in, levels, resolution);
    *out = h.release();
  });
}

void armature_grid_hierarchy_destroy(armature_grid_hierarchy hierarchy) {
  guard("armature_grid_hierarchy_destroy", [&] { delete hierarchy; });
}

namespace {
// A hierarchy's array: its shape and where its elements are (float32 or int64).
struct HierarchyArray {
  std::vector<uint64_t> shape;
  const void* data;
  size_t elementBytes;
};
HierarchyArray hierarchyArray(const GridHierarchy& h, const char* name, uint32_t level) {
  ARM_CHECK(name, "name is NULL");
  const std::string n = name;
  const uint64_t N = h.isOriginal.size();
  if (n == "positions") return {{N, 3}, h.positions.data(), 4};
  if (n == "is_original") return {{N}, h.isOriginal.data(), 4};
  if (n == "features") return {{N, h.channels}, h.features.data(), 4};
  const auto perLevel = [&](const std::vector<std::vector<int64_t>>& lists, uint64_t columns) -> HierarchyArray {
    ARM_CHECK(level < lists.size(), "%s has %zu levels; level %u", name, lists.size(), level);
    const std::vector<int64_t>& l = lists[level];
    if (columns == 1) return {{l.size()}, l.data(), 8};
    return {{l.size() / columns, columns}, l.data(), 8};
  };
  if (n == "neighbors") return perLevel(h.neighbors, 9);
  if (n == "downsamples") return perLevel(h.downsamples, 1);
  if (n == "even_corners") return perLevel(h.evenCorners, 1);
  if (n == "odd_corners") return perLevel(h.oddCorners, 1);
  throw Error("no array '" + n + "' (positions, is_original, features, neighbors, downsamples, even_corners, " +
              "odd_corners)");
}
}  // namespace

armature_status armature_grid_hierarchy_shape(armature_grid_hierarchy hierarchy, const char* name, uint32_t level,
                                              uint32_t* rank, uint64_t shape[2]) {
  return guard("armature_grid_hierarchy_shape", [&] {
    ARM_CHECK(rank && shape, "rank or shape is NULL");
    const HierarchyArray a = hierarchyArray(deref(hierarchy, "hierarchy").hierarchy, name, level);
    *rank = uint32_t(a.shape.size());
    shape[0] = a.shape[0], shape[1] = a.shape.size() > 1 ? a.shape[1] : 0;
  });
}

armature_status armature_grid_hierarchy_copy(armature_grid_hierarchy hierarchy, const char* name, uint32_t level,
                                             void* values, uint64_t count) {
  return guard("armature_grid_hierarchy_copy", [&] {
    const HierarchyArray a = hierarchyArray(deref(hierarchy, "hierarchy").hierarchy, name, level);
    uint64_t n = 1;
    for (uint64_t d : a.shape) n *= d;
    ARM_CHECK(count == n, "%s has %llu values; count is %llu", name, (unsigned long long)n, (unsigned long long)count);
    ARM_CHECK(values || count == 0, "values is NULL");
    if (count) std::memcpy(values, a.data, count * a.elementBytes);
  });
}

}  // extern "C"
