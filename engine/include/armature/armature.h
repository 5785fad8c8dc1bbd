/* Armature's C API: a stable surface for other languages and engines (Python through ctypes, Rust, C#, Godot).
 *
 * - Handles are opaque. Structs that may grow begin with `s_type` and `size` (set size = sizeof the struct you were
 *   compiled with; new members are only ever added at the end) and `next` (NULL; for extensions).
 * - Every function returns an armature_status; on failure armature_last_error() holds this thread's message (it names
 *   the argument and the limit). No exception or signal crosses this boundary.
 * - Vulkan handles cross as 64-bit integers (uint64_t), so a C caller needs no Vulkan header.
 * - Tensors are described by memory (a VkBuffer and byte offset, or a CUDA device pointer), element type, shape and
 *   strides. Ops take dense row-major tensors; any other strides are refused with a message. A tensor must not claim
 *   more elements than its memory holds: the library cannot see a raw VkBuffer's or pointer's extent.
 * - Work goes where an armature_exec says: recorded into the caller's Vulkan command buffer (the caller submits it),
 *   or enqueued on the caller's CUDA stream; an op never waits for the GPU. The recording contract (barriers, state
 *   left bound, usage flags) is in docs/embedding.md.
 */
#ifndef ARMATURE_ARMATURE_H
#define ARMATURE_ARMATURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ARMATURE_API __declspec(dllimport)
#else
#define ARMATURE_API __attribute__((visibility("default")))
#endif

/* The C API's version: bumped when a function or struct member is added (never changed or removed). */
#define ARMATURE_C_API_VERSION 3

typedef enum armature_status {
  ARMATURE_OK = 0,
  ARMATURE_ERROR_INVALID_ARGUMENT = 1, /* a shape, type, size, index or handle the op refuses */
  ARMATURE_ERROR_UNAVAILABLE = 2,      /* no such backend here: no Vulkan device, no CUDA, not built with it */
  ARMATURE_ERROR_OUT_OF_MEMORY = 3,
  ARMATURE_ERROR_INTERNAL = 4 /* a failure of the driver or the library; the message says which */
} armature_status;

typedef enum armature_struct_type {
  ARMATURE_STRUCT_CONTEXT_INFO = 1,
  ARMATURE_STRUCT_HOST_DEVICE = 2,
  ARMATURE_STRUCT_SKINNING_INFO = 3
} armature_struct_type;

/* CPU (since version 2): the double-precision references on host memory: float64 tensors (int32 for indices) whose
 * `data` is a host pointer, no device needed (pass NULL), run to completion in the call. The exact results and
 * gradients that the GPU backends are checked against; for tests, gradient checks and machines without a GPU. Ops
 * that have it say so. */
typedef enum armature_backend {
  ARMATURE_BACKEND_VULKAN = 1,
  ARMATURE_BACKEND_CUDA = 2,
  ARMATURE_BACKEND_CPU = 3
} armature_backend;

typedef enum armature_dtype {
  ARMATURE_FLOAT32 = 0,
  ARMATURE_INT32 = 1,
  ARMATURE_UINT32 = 2,
  ARMATURE_BYTE = 3,
  ARMATURE_FLOAT64 = 4 /* the CPU backend's */
} armature_dtype;

/* This thread's message of the last failed call ("" when there was none). Valid until this thread's next call. */
ARMATURE_API const char* armature_last_error(void);
/* ARMATURE_C_API_VERSION of the library loaded (compare with the header's). */
ARMATURE_API uint32_t armature_api_version(void);

/* ---- Vulkan contexts -------------------------------------------------------------------------------------- */

typedef struct armature_context_t* armature_context;

/* A context that creates its own instance and device (the first usable device, or ARMATURE_VK_DEVICE). */
typedef struct armature_context_info {
  uint32_t s_type; /* ARMATURE_STRUCT_CONTEXT_INFO */
  uint32_t size;
  const void* next;
  uint32_t validation; /* nonzero: enable VK_LAYER_KHRONOS_validation; messages go to stderr */
} armature_context_info;
ARMATURE_API armature_status armature_context_create(const armature_context_info* info, armature_context* out);

/* Submits a batch for the library (uploads, set-up, armature_device_run) on the host's queue, with the host's own
 * synchronisation: `submits` points to `count` VkSubmitInfo, `fence` is a VkFence. Returns a VkResult. */
typedef int32_t (*armature_submit_fn)(void* user, uint64_t queue, uint32_t count, const void* submits, uint64_t fence);

/* The host's device, borrowed: the context never destroys these handles. Zero-initialise, then fill. */
typedef struct armature_host_device {
  uint32_t s_type; /* ARMATURE_STRUCT_HOST_DEVICE */
  uint32_t size;
  const void* next;
  uint64_t instance, physical_device, device; /* VkInstance, VkPhysicalDevice, VkDevice */
  uint32_t queue_family;                      /* must do compute */
  uint64_t queue;                             /* VkQueue */
  void* get_instance_proc_addr;               /* PFN_vkGetInstanceProcAddr; NULL: the system loader's */
  const void* allocator;                      /* const VkAllocationCallbacks*, or NULL */
  uint64_t pipeline_cache;                    /* VkPipelineCache, or 0 */
  uint32_t api_version;                       /* the device's API version as created (at least 1.2) */
  uint32_t extension_count;                   /* the device extensions the host enabled */
  const char* const* extensions;
  const void* features;      /* the VkPhysicalDeviceFeatures2 chain given to vkCreateDevice (read during attach) */
  armature_submit_fn submit; /* NULL: the library submits to `queue` itself; no other thread may use it meanwhile */
  void* submit_user;
} armature_host_device;
ARMATURE_API armature_status armature_context_attach(const armature_host_device* host, armature_context* out);
/* Frees what the context created (never the host's handles). Work it recorded must have finished. */
ARMATURE_API void armature_context_destroy(armature_context context);
/* Validation-layer messages this context has seen (with armature_context_info.validation; each is also printed). */
ARMATURE_API armature_status armature_context_validation_messages(armature_context context, uint32_t* count);
/* A line per fact: the device, and each optional feature with whether ops use it (as `armature info` prints). */
ARMATURE_API armature_status armature_context_describe(armature_context context, char* text, size_t capacity);

/* ---- Vulkan requirements, before the host creates its device --------------------------------------------- */

/* The Vulkan API version Armature needs of the instance and device (it needs no instance extension). */
ARMATURE_API uint32_t armature_vk_required_api_version(void);

typedef struct armature_vk_requirements_t* armature_vk_requirements;
/* What `physical_device` needs enabled. Fails, naming it, where a required version, extension or feature is
 * missing. `get_instance_proc_addr`: the host's PFN_vkGetInstanceProcAddr, or NULL for the system loader's. */
ARMATURE_API armature_status armature_vk_requirements_create(uint64_t instance, uint64_t physical_device,
                                                             void* get_instance_proc_addr,
                                                             armature_vk_requirements* out);
/* The device extensions to enable (required, and the optional ones present); the strings live as long as `req`. */
ARMATURE_API armature_status armature_vk_requirements_extensions(armature_vk_requirements req, uint32_t* count,
                                                                 const char* const** names);
/* Turns on Armature's features in the VkPhysicalDeviceFeatures2 chain at `features2`, appending structures it lacks
 * (owned by `req`, which must outlive vkCreateDevice). */
ARMATURE_API armature_status armature_vk_requirements_add_features(armature_vk_requirements req, void* features2);
ARMATURE_API void armature_vk_requirements_destroy(armature_vk_requirements req);

/* ---- devices, memory, execution --------------------------------------------------------------------------- */

typedef struct armature_device_t* armature_device;
/* A device over `context` (its Vulkan device, and CUDA where CUDA drives the same GPU), or CUDA's first device when
 * `context` is NULL. The context must outlive the device. */
ARMATURE_API armature_status armature_device_create(armature_context context, armature_device* out);
ARMATURE_API void armature_device_destroy(armature_device device);
/* ARMATURE_OK where `backend` can run ops on this device's memory; else ARMATURE_ERROR_UNAVAILABLE and the reason. */
ARMATURE_API armature_status armature_device_supports(armature_device device, armature_backend backend);

/* Memory described for an op: a VkBuffer (with a byte offset) or a CUDA device pointer (or both, when shared); for
 * the CPU backend, host memory. */
#define ARMATURE_MAX_RANK 6
typedef struct armature_tensor {
  uint64_t vk_buffer;
  uint64_t offset; /* bytes into vk_buffer */
  void* data;      /* a CUDA device pointer, or host memory (ARMATURE_BACKEND_CPU) */
  armature_dtype dtype;
  uint32_t rank;
  int64_t shape[ARMATURE_MAX_RANK];
  int64_t strides[ARMATURE_MAX_RANK]; /* in elements; all 0: dense row-major */
} armature_tensor;

/* An allocation owned by the library, usable by every backend of its device (storage, vertex, index, transfer). */
typedef struct armature_buffer_t* armature_buffer;
ARMATURE_API armature_status armature_buffer_create(armature_device device, armature_dtype dtype, uint64_t count,
                                                    armature_buffer* out);
ARMATURE_API void armature_buffer_destroy(armature_buffer buffer);
ARMATURE_API armature_status armature_buffer_upload(armature_buffer buffer, const void* data, uint64_t bytes,
                                                    uint64_t offset);
ARMATURE_API armature_status armature_buffer_download(armature_buffer buffer, void* data, uint64_t bytes,
                                                      uint64_t offset);
/* The buffer as a dense tensor of `shape` (its element count at most the buffer's). */
ARMATURE_API armature_status armature_buffer_tensor(armature_buffer buffer, uint32_t rank, const int64_t* shape,
                                                    armature_tensor* out);

/* A host's VkBuffer as a library buffer (since version 2): Vulkan ops bind it and, where CUDA drives the same GPU,
 * CUDA ops write the same memory, imported zero-copy. `memory` (a VkDeviceMemory of `allocation_size` bytes, the
 * buffer bound at `offset`) must have been allocated with VkExportMemoryAllocateInfo for
 * VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT for CUDA to import it (`dedicated`: with
 * VkMemoryDedicatedAllocateInfo for this buffer). The result owns only the import: destroy it before the host frees
 * its buffer; it cannot be uploaded to or downloaded from (the memory is the host's). */
typedef struct armature_host_allocation {
  uint64_t buffer, memory; /* VkBuffer, VkDeviceMemory */
  uint64_t allocation_size, offset;
  uint32_t dedicated;
} armature_host_allocation;
ARMATURE_API armature_status armature_buffer_adopt(armature_device device, const armature_host_allocation* host,
                                                   armature_dtype dtype, uint64_t count, armature_buffer* out);

/* Where an op's work goes: recorded into `command_buffer` (a VkCommandBuffer in the recording state, on the device's
 * queue family), or enqueued on `cuda_stream` (a cudaStream_t; 0 is the legacy default stream). */
typedef struct armature_exec {
  armature_backend backend;
  uint64_t command_buffer;
  void* cuda_stream;
} armature_exec;
/* Records `work` into a fresh command buffer (or this device's own CUDA stream), submits it and waits: for set-up,
 * tests and one-off jobs. A failure inside `work` (its return value) stops it and is returned. */
typedef armature_status (*armature_work_fn)(void* user, const armature_exec* exec);
ARMATURE_API armature_status armature_device_run(armature_device device, armature_backend backend,
                                                 armature_work_fn work, void* user);
/* Orders the work recorded so far on `exec` before what follows (a compute barrier on Vulkan; nothing on CUDA). */
ARMATURE_API armature_status armature_barrier(armature_device device, const armature_exec* exec);

/* ---- ops: each checks every argument before recording or launching anything ------------------------------ */

/* y += a·x, x and y float32 of n elements (y may be longer). */
ARMATURE_API armature_status armature_axpy(armature_device device, const armature_exec* exec, float a,
                                           const armature_tensor* x, const armature_tensor* y);

/* Body skinning (smplx's lbs()) of a body model file (.npz or .pkl, SMPL / SMPL+H / SMPL-X / MANO). CPU backend
 * (since version 2): the double reference, with a NULL device; shape_components and expression_components are then
 * only the maxima the calls' betas and expression may use. */
typedef struct armature_skinning_t* armature_skinning;
typedef struct armature_skinning_info {
  uint32_t s_type; /* ARMATURE_STRUCT_SKINNING_INFO */
  uint32_t size;
  const void* next;
  const char* model_path;
  armature_backend backend;
  uint32_t shape_components, expression_components; /* S, E: at most the model's */
  uint32_t max_batch;
  /* Since version 3, optional: a vertex template (V,3) in place of the file's (smplx's v_template); NULL: the
   * file's. Copied at creation. */
  const double* v_template;
} armature_skinning_info;
ARMATURE_API armature_status armature_skinning_create(armature_device device, const armature_skinning_info* info,
                                                      armature_skinning* out);
ARMATURE_API void armature_skinning_destroy(armature_skinning skinning);
/* V, J: the model's vertices and joints (the outputs' shapes). */
ARMATURE_API armature_status armature_skinning_sizes(armature_skinning skinning, uint32_t* vertices, uint32_t* joints);
/* pose (B,J,3) axis-angle, betas (B,S), expression (B,E), transl (B,3) → vertices (B,V,3), joints (B,J,3). */
ARMATURE_API armature_status armature_skinning_forward(armature_skinning skinning, const armature_exec* exec,
                                                       const armature_tensor* pose, const armature_tensor* betas,
                                                       const armature_tensor* expression, const armature_tensor* transl,
                                                       const armature_tensor* vertices, const armature_tensor* joints);
/* The exact backward of the last forward on `skinning` (same exec, batch and pose); grad_joints may be NULL. */
ARMATURE_API armature_status armature_skinning_backward(
    armature_skinning skinning, const armature_exec* exec, const armature_tensor* pose,
    const armature_tensor* grad_vertices, const armature_tensor* grad_joints, const armature_tensor* grad_pose,
    const armature_tensor* grad_betas, const armature_tensor* grad_expression, const armature_tensor* grad_transl);

/* The Gaussian field f(x) = Σ wᵢ·exp(−½‖Lᵢ⁻¹(x−μᵢ)‖²) (CPU backend: dense, without scratch), dense: x (B,3), means
 * (N,3), cholesky (N,6) anisotropic (log-diagonal and lower entries, gaussian_field.h) or (N,1) isotropic, weights
 * (N,C) → field (B,C). */
typedef struct armature_gaussian_field_inputs {
  const armature_tensor *x, *means, *cholesky, *weights;
  /* Culled mode: a grid armature_build_gaussian_grid built over these Gaussians (UInt32 words); NULL: dense. */
  const armature_tensor* grid;
} armature_gaussian_field_inputs;
/* Culled mode (armature/ops/gaussian_field.h): the grid's UInt32 words for `points` and `gaussians`, and its build
 * over the inputs' Gaussians with cut `epsilon` > 0 (every term left out is below ε). Rebuild when the Gaussians or
 * ε change; a grid serves one evaluation at a time. */
ARMATURE_API armature_status armature_gaussian_grid_words(uint32_t points, uint32_t gaussians, uint64_t* words);
ARMATURE_API armature_status armature_build_gaussian_grid(armature_device device, const armature_exec* exec,
                                                          const armature_gaussian_field_inputs* in, float epsilon,
                                                          const armature_tensor* grid);
/* The scratch (float32 elements) a call needs; 0 when none. */
ARMATURE_API armature_status armature_gaussian_field_scratch(uint32_t points, uint32_t gaussians, uint32_t channels,
                                                             int backward, uint64_t* floats);
ARMATURE_API armature_status armature_gaussian_field(armature_device device, const armature_exec* exec,
                                                     const armature_gaussian_field_inputs* in,
                                                     const armature_tensor* field, const armature_tensor* scratch);
/* Gradients (each optional, NULL: not wanted) from grad_field (B,C); scratch as armature_gaussian_field_scratch. */
ARMATURE_API armature_status armature_gaussian_field_backward(
    armature_device device, const armature_exec* exec, const armature_gaussian_field_inputs* in,
    const armature_tensor* grad_field, const armature_tensor* grad_points, const armature_tensor* grad_means,
    const armature_tensor* grad_cholesky, const armature_tensor* grad_weights, const armature_tensor* scratch);

/* Points to clip space for B views: points (N,3) shared or (B,N,3), matrices (B,16) column-major → clip (B,N,4). */
ARMATURE_API armature_status armature_project(armature_device device, const armature_exec* exec,
                                              const armature_tensor* points, const armature_tensor* matrices,
                                              const armature_tensor* clip);
/* dL/dpoints (the shape of points; shared points sum over the views) from dL/dclip (B,N,4); and, if grad_matrices
 * is not NULL, dL/dmatrices (B,16). */
ARMATURE_API armature_status armature_project_backward(armature_device device, const armature_exec* exec,
                                                       const armature_tensor* points, const armature_tensor* matrices,
                                                       const armature_tensor* grad_clip,
                                                       const armature_tensor* grad_points,
                                                       const armature_tensor* grad_matrices);

/* Deformable aggregation (SparseDrive's deformable_aggregation_function). The feature maps' layout is fixed per
 * model: `cameras` × `levels` maps, spatial_shape (cams, levels, 2) as (H, W), scale_start_index (cams, levels).
 * CPU backend: yes (feature maps made with a NULL device serve it alone; scratch unused). */
typedef struct armature_feature_maps_t* armature_feature_maps;
ARMATURE_API armature_status armature_feature_maps_create(armature_device device, uint32_t cameras, uint32_t levels,
                                                          const int32_t* spatial_shape,
                                                          const int32_t* scale_start_index, uint32_t features,
                                                          armature_feature_maps* out);
ARMATURE_API void armature_feature_maps_destroy(armature_feature_maps maps);
/* features (bs, F, C), locations (bs, anchors, points, cams, 2), weights (bs, anchors, points, cams, levels,
 * groups) → out (bs, anchors, C). */
ARMATURE_API armature_status armature_deformable_aggregation(
    armature_device device, const armature_exec* exec, armature_feature_maps maps, const armature_tensor* features,
    const armature_tensor* locations, const armature_tensor* weights, const armature_tensor* out);
/* The scratch (uint32 words) a backward needs, for the shapes of `features`, `locations` and `weights`. */
ARMATURE_API armature_status armature_deformable_aggregation_scratch(armature_feature_maps maps,
                                                                     const armature_tensor* features,
                                                                     const armature_tensor* locations,
                                                                     const armature_tensor* weights, uint64_t* words);
/* Gradients (each optional, at least one) from grad_out (bs, anchors, C). */
ARMATURE_API armature_status armature_deformable_aggregation_backward(
    armature_device device, const armature_exec* exec, armature_feature_maps maps, const armature_tensor* features,
    const armature_tensor* locations, const armature_tensor* weights, const armature_tensor* grad_out,
    const armature_tensor* grad_features, const armature_tensor* grad_locations, const armature_tensor* grad_weights,
    const armature_tensor* scratch);

/* The triangle rasteriser (nvdiffrast / Hunyuan3D custom_rasterizer semantics, docs/raster.md). CPU backend: yes
 * for rasterize, interpolate and their backwards (the reference rasterises float32 positions, as the GPUs do:
 * float64 ones are rounded; findices and faces int32; no scratch). */
typedef struct armature_raster_desc {
  uint32_t width, height;
  uint32_t images;          /* B */
  uint32_t ranges;          /* nonzero: positions (N,4) shared, drawn by face ranges (B,2); 0: (B,N,4) instanced */
  uint32_t use_depth_prior; /* nonzero: keep fragments at or behind depth_prior + occlusion_truncation */
  float occlusion_truncation;
  uint32_t scratch_call; /* 0, or this call's place in its scratch's history (armature/ops/raster.h) */
} armature_raster_desc;
ARMATURE_API armature_status armature_raster_scratch_bytes(const armature_raster_desc* desc, uint64_t* bytes);
/* positions (B,N,4) or (N,4) clip space, faces (F,3) int32 → findices (B,H,W) int32 (face + 1, 0 background) and
 * barycentrics (B,H,W,3); depth_prior (B,H,W) and ranges (B,2) int32 as the desc says, else NULL. */
ARMATURE_API armature_status armature_rasterize(armature_device device, const armature_exec* exec,
                                                const armature_raster_desc* desc, const armature_tensor* positions,
                                                const armature_tensor* faces, const armature_tensor* depth_prior,
                                                const armature_tensor* ranges, const armature_tensor* scratch,
                                                const armature_tensor* findices, const armature_tensor* barycentrics);
/* dL/dpositions from dL/dbarycentrics at the faces a rasterize of the same inputs found. */
ARMATURE_API armature_status armature_rasterize_backward(armature_device device, const armature_exec* exec,
                                                         const armature_raster_desc* desc,
                                                         const armature_tensor* positions, const armature_tensor* faces,
                                                         const armature_tensor* findices,
                                                         const armature_tensor* grad_barycentrics,
                                                         const armature_tensor* grad_positions);
/* Attributes at each pixel: attr (N,C) shared or (B,N,C) per image, with findices and barycentrics of a rasterize
 * → out (B,H,W,C). */
ARMATURE_API armature_status armature_interpolate(armature_device device, const armature_exec* exec,
                                                  const armature_tensor* attr, const armature_tensor* findices,
                                                  const armature_tensor* barycentrics, const armature_tensor* faces,
                                                  const armature_tensor* out);
/* grad_attr (accumulated into: zero it first) and grad_barycentrics (overwritten) from grad_out (B,H,W,C). */
ARMATURE_API armature_status armature_interpolate_backward(
    armature_device device, const armature_exec* exec, const armature_tensor* attr, const armature_tensor* findices,
    const armature_tensor* barycentrics, const armature_tensor* faces, const armature_tensor* grad_out,
    const armature_tensor* grad_attr, const armature_tensor* grad_barycentrics);

/* A body model file's contents (since version 2), for what a caller builds around skinning (smplx's PCA hands,
 * face landmarks, vertex-selected joints). */
typedef struct armature_body_model_t* armature_body_model;
ARMATURE_API armature_status armature_body_model_load(const char* path, armature_body_model* out);
ARMATURE_API void armature_body_model_destroy(armature_body_model model);
typedef struct armature_body_model_info {
  uint32_t vertices, faces, joints;
  uint32_t shape_count, expression_count; /* the directions the file has */
  uint32_t hand_pca;                      /* nonzero: hands_components{l,r} and hands_mean{l,r} (45 each) */
  uint32_t landmarks;                     /* L: lmk_faces_idx (L) and lmk_bary_coords (L,3) */
} armature_body_model_info;
ARMATURE_API armature_status armature_body_model_info_get(armature_body_model model, armature_body_model_info* out);
/* The array `name` as float64 (integers exactly), into `values` of exactly its `count` elements: v_template (V,3),
 * f (F,3), kintree_parents (J), J_regressor (J,V), weights (V,J), shapedirs (V,3,S), exprdirs (V,3,E), posedirs
 * (V,3,P), hands_componentsl and hands_componentsr (45,45), hands_meanl and hands_meanr (45), a one-hand model's
 * hands_components (45,45) and hands_mean (45), lmk_faces_idx (L), lmk_bary_coords (L,3), and the face contour's
 * dynamic_lmk_faces_idx (A,C) and dynamic_lmk_bary_coords (A,C,3). */
ARMATURE_API armature_status armature_body_model_array(armature_body_model model, const char* name, double* values,
                                                       uint64_t count);
/* Its shape (since version 3): `rank` dimensions into `shape`; one dimension of 0 where the file has none. */
ARMATURE_API armature_status armature_body_model_array_shape(armature_body_model model, const char* name,
                                                             uint32_t* rank, uint64_t shape[4]);

/* ---- the grid hierarchy (since version 3) ---------------------------------------------------------------- */

/* Hunyuan3D-2's build_hierarchy (and _with_feat): three axis views of `layers` depth layers of height × width
 * pixels, positions (L,H,W,4) (w = 0: empty), normals (L,H,W,3), features (L,H,W,C) or NULL, as host float32. Built
 * on ARMATURE_BACKEND_CPU (threads) or ARMATURE_BACKEND_CUDA (the current device; bit for bit the same) into a host
 * result read with the calls below. */
typedef struct armature_grid_view {
  uint32_t layers, height, width;
  const float* positions;
  const float* normals;
  const float* features;
} armature_grid_view;
typedef struct armature_grid_hierarchy_t* armature_grid_hierarchy;
ARMATURE_API armature_status armature_grid_hierarchy_build(armature_backend backend, const armature_grid_view* views,
                                                           uint32_t view_count, uint32_t channels, int32_t levels,
                                                           int32_t resolution, armature_grid_hierarchy* out);
ARMATURE_API void armature_grid_hierarchy_destroy(armature_grid_hierarchy hierarchy);
/* The shape of array `name` (level: for the per-level arrays): positions (N,3) and is_original (N) float32,
 * features (N,C) float32, neighbors (N_l,9), downsamples (N_l; every level but the last), even_corners and
 * odd_corners (N_l) int64. */
ARMATURE_API armature_status armature_grid_hierarchy_shape(armature_grid_hierarchy hierarchy, const char* name,
                                                           uint32_t level, uint32_t* rank, uint64_t shape[2]);
/* Copies it into `values` of exactly its element count. */
ARMATURE_API armature_status armature_grid_hierarchy_copy(armature_grid_hierarchy hierarchy, const char* name,
                                                          uint32_t level, void* values, uint64_t count);

/* ---- joint propagation, linear blend skinning, posed Gaussians (since version 2) ------------------------- */

/* A joint forest, analysed once (for the CPU backend alone when `device` is NULL): parents (joints) int32, -1 for a
 * root, in any order (a parent out of range, a joint its own parent and a cycle are refused, naming the joints);
 * point_joints (points) int32: the joint each attached point follows (NULL when points is 0). */
typedef struct armature_joint_forest_t* armature_joint_forest;
ARMATURE_API armature_status armature_joint_forest_create(armature_device device, uint32_t joints,
                                                          const int32_t* parents, uint32_t points,
                                                          const int32_t* point_joints, armature_joint_forest* out);
ARMATURE_API void armature_joint_forest_destroy(armature_joint_forest forest);
/* The float32 scratch a propagation (forward or backward) of `batch` needs. */
ARMATURE_API armature_status armature_joint_forest_scratch(armature_joint_forest forest, uint32_t batch,
                                                           uint64_t* floats);

typedef enum armature_local_transform {
  ARMATURE_LOCAL_RIGID = 0, /* rotations (B,N,4) unit quaternions (x, y, z, w), translations (B,N,3) */
  ARMATURE_LOCAL_AFFINE = 1 /* affine (B,N,12), 3×4 row-major */
} armature_local_transform;
/* Each joint's transform relative to its parent (the batch B is their first dimension), and the inverse bind
 * matrices (N,12) the skinning matrices need (NULL: none). */
typedef struct armature_joint_locals {
  armature_local_transform kind;
  const armature_tensor *rotations, *translations, *affine, *inverse_bind;
} armature_joint_locals;
/* CPU backend: yes. globals (B,N,12) = parent's globals · local; skinning (B,N,12) = globals · inverse_bind, positions
 * (B,N,3) and points_out (B,P,3) (points (P,3) in their joints' frames) when not NULL. scratch:
 * armature_joint_forest_scratch. */
ARMATURE_API armature_status armature_joint_propagation(
    armature_device device, const armature_exec* exec, armature_joint_forest forest,
    const armature_joint_locals* locals, const armature_tensor* points, const armature_tensor* globals,
    const armature_tensor* skinning, const armature_tensor* positions, const armature_tensor* points_out,
    const armature_tensor* scratch);
/* The exact backward (CPU backend: yes; adjoint and scratch unused there), from the forward's inputs and globals:
 * gradients of the outputs (each optional, at least one) → gradients of the locals (grad_rotations and
 * grad_translations, or grad_affine, overwritten) and of points (P,3, summed over the batch, with grad_points_out).
 * adjoint: scratch (B,N,12) float32. */
ARMATURE_API armature_status armature_joint_propagation_backward(
    armature_device device, const armature_exec* exec, armature_joint_forest forest,
    const armature_joint_locals* locals, const armature_tensor* points, const armature_tensor* globals,
    const armature_tensor* grad_globals, const armature_tensor* grad_skinning, const armature_tensor* grad_positions,
    const armature_tensor* grad_points_out, const armature_tensor* adjoint, const armature_tensor* scratch,
    const armature_tensor* grad_rotations, const armature_tensor* grad_translations, const armature_tensor* grad_affine,
    const armature_tensor* grad_points);

/* Skin weights of V vertices: `influences` (joint, weight) pairs each, joints (V,K) uint32 below `joint_count`,
 * weights (V,K) float32 (finite, non-negative). */
typedef struct armature_skin_weights_t* armature_skin_weights;
ARMATURE_API armature_status armature_skin_weights_create(armature_device device, uint32_t joint_count,
                                                          uint32_t influences, uint32_t vertices,
                                                          const uint32_t* joints, const float* weights,
                                                          armature_skin_weights* out);
ARMATURE_API void armature_skin_weights_destroy(armature_skin_weights weights);
/* rest (V,3), skinning matrices (B,J,12) (armature_joint_propagation's) → positions (B,V,3). */
ARMATURE_API armature_status armature_linear_blend_skinning(armature_device device, const armature_exec* exec,
                                                            armature_skin_weights weights, const armature_tensor* rest,
                                                            const armature_tensor* skinning,
                                                            const armature_tensor* positions);

/* Gaussians carried by joints: transforms (J,12) 3×4 row-major, gaussian_joints (N) int32 (one out of [0, J) is
 * posed to NaN), means (N,3), cholesky (N,6) → posed_means (N,3), posed_cholesky (N,6); `post` (12 floats, or NULL
 * for the identity) is applied after the joint's transform. */
ARMATURE_API armature_status armature_pose_gaussians(armature_device device, const armature_exec* exec,
                                                     const armature_tensor* transforms,
                                                     const armature_tensor* gaussian_joints,
                                                     const armature_tensor* means, const armature_tensor* cholesky,
                                                     const float* post, const armature_tensor* posed_means,
                                                     const armature_tensor* posed_cholesky);

/* ---- meshes, texture baking, optimisation (since version 2) ---------------------------------------------- */

/* A triangle mesh: vertices (V,3) float32, faces (F,3) int32 (each index in [0, V)). */
typedef struct armature_triangle_mesh_t* armature_triangle_mesh;
ARMATURE_API armature_status armature_triangle_mesh_create(armature_device device, uint32_t vertices,
                                                           const float* positions, uint32_t faces,
                                                           const int32_t* indices, armature_triangle_mesh* out);
ARMATURE_API void armature_triangle_mesh_destroy(armature_triangle_mesh mesh);
/* The generalised winding number of the mesh at each point x (P,3) → windings (P) (1 inside a closed mesh, 0
 * outside), and the unsigned distance to it → distances (P) when not NULL. */
ARMATURE_API armature_status armature_winding_numbers(armature_device device, const armature_exec* exec,
                                                      armature_triangle_mesh mesh, const armature_tensor* x,
                                                      const armature_tensor* windings,
                                                      const armature_tensor* distances);

/* Texture baking's sampling step (armature/ops/texture_bake.h): for each of T texels, where each of K views of
 * H × W sees it and how much that view counts. */
typedef struct armature_bake_desc {
  uint32_t texels, views, width, height, vertices, faces;
  float tolerance;  /* along the view ray, in the mesh's units (0.01) */
  float min_cosine; /* views more oblique count for nothing (0.1) */
  float sharpness;  /* weight cos^sharpness (2) */
} armature_bake_desc;
/* positions (V,3), faces (F,3) int32, texel_faces (T) int32 (face + 1) and texel_bary (T,3) (the atlas's raster),
 * view_faces (K,H,W) int32 and view_bary (K,H,W,3) (the views' raster), matrices (K,16) → locations (T,K,2),
 * weights (T,K). */
ARMATURE_API armature_status armature_bake_samples(armature_device device, const armature_exec* exec,
                                                   const armature_bake_desc* desc, const armature_tensor* positions,
                                                   const armature_tensor* faces, const armature_tensor* texel_faces,
                                                   const armature_tensor* texel_bary, const armature_tensor* view_faces,
                                                   const armature_tensor* view_bary, const armature_tensor* matrices,
                                                   const armature_tensor* locations, const armature_tensor* weights);

/* One Adam step (torch.optim.Adam's, without weight decay) over n floats: params, m and v updated in place from
 * grads; `step` counts from 1 (the bias correction's). */
typedef struct armature_adam_settings {
  double lr, beta1, beta2, eps;
} armature_adam_settings;
ARMATURE_API armature_status armature_adam_step(armature_device device, const armature_exec* exec,
                                                const armature_adam_settings* settings, uint32_t step,
                                                const armature_tensor* params, const armature_tensor* grads,
                                                const armature_tensor* m, const armature_tensor* v);

#ifdef __cplusplus
}
#endif

#endif /* ARMATURE_ARMATURE_H */
