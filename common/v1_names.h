// The names of the v1 API enums that people read and the store keeps: one
// table for prompts (agent), stored rows and API views (convert), CLI output
// and daemon messages, so a backend, dtype or evaluation status is spelled
// the same everywhere.
//
//   BackendName  "host" | "cuda" | "unspecified" (any other value)
//   DtypeName    "f32" | "f16" | "bf16" | "f64" | "i32" | "i64" | "u8" |
//                "fp8_e4m3" | "default" (unspecified or any other value)
//   StatusName   the proto enum name: "OK", "COMPILE_ERROR", ..., "" for a
//                value the enum does not have
//   ParseStatus  StatusName's inverse; STATUS_UNSPECIFIED for "" or an
//                unknown name (a row written by a newer writer)
//
// Header-only on purpose (like grpc_status.h): pkforge_common must not link
// protobuf (the sandbox links common), so only targets that already link
// pkforge::proto include it. The returned views point at static storage.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "pkforge/v1/common.pb.h"

namespace pkforge {

inline std::string_view BackendName(v1::Backend backend) {
  switch (backend) {
    case v1::BACKEND_CUDA:
      return "cuda";
    case v1::BACKEND_HOST:
      return "host";
    default:
      return "unspecified";
  }
}

inline std::string_view DtypeName(v1::Dtype dtype) {
  switch (dtype) {
    case v1::DTYPE_F32:
      return "f32";
    case v1::DTYPE_F16:
      return "f16";
    case v1::DTYPE_BF16:
      return "bf16";
    case v1::DTYPE_F64:
      return "f64";
    case v1::DTYPE_I32:
      return "i32";
    case v1::DTYPE_I64:
      return "i64";
    case v1::DTYPE_U8:
      return "u8";
    case v1::DTYPE_FP8_E4M3:
      return "fp8_e4m3";
    default:
      return "default";
  }
}

// Status_Name returns a reference into the generated descriptor tables (or
// protobuf's static empty string), which live as long as the program.
inline std::string_view StatusName(v1::EvaluationResult::Status status) {
  return v1::EvaluationResult::Status_Name(status);
}

inline v1::EvaluationResult::Status ParseStatus(std::string_view name) {
  v1::EvaluationResult::Status s = v1::EvaluationResult::STATUS_UNSPECIFIED;
  if (!name.empty()) v1::EvaluationResult::Status_Parse(std::string(name), &s);
  return s;
}

}  // namespace pkforge
