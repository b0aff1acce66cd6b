#pragma once
// The messages between the parent and a GPU worker process (over worker.h's frames):
//   {"op": "info"}                          -> {"device": DeviceInfo}
//   {"op": "peaks"}                         -> {"peaks": DevicePeaks}
//   {"op": "run", "job": GpuJob}            -> {"result": GpuJobResult} (+ "restart_worker": true)
//   {"op": "time_reference", "task_id", "scale", "seed", "timing"} -> {"samples_ms": [...]}
// The cubin travels base64-encoded.
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <harness/gpu/gpu_session.h>

namespace kbrl {

void to_json(nlohmann::json& j, const DeviceInfo& info);
void from_json(const nlohmann::json& j, DeviceInfo& info);
void to_json(nlohmann::json& j, const DevicePeaks& peaks);
void from_json(const nlohmann::json& j, DevicePeaks& peaks);
void to_json(nlohmann::json& j, const TimingSettings& timing);
void from_json(const nlohmann::json& j, TimingSettings& timing);
void to_json(nlohmann::json& j, const GpuJob& job);
void from_json(const nlohmann::json& j, GpuJob& job);
void to_json(nlohmann::json& j, const GpuJobResult& result);
void from_json(const nlohmann::json& j, GpuJobResult& result);

/// The worker's request handler over a session (used by `kbrl worker`).
nlohmann::json handle_gpu_request(GpuSession& session, const nlohmann::json& request);

/// The body of `kbrl worker`: opens a GpuSession on `device`, then serves requests on the worker
/// fds until the parent closes them. Returns the process exit status.
int run_gpu_worker(int device);

}  // namespace kbrl
