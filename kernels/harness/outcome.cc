#include "kernels/harness/outcome.h"

#include <algorithm>

namespace pkforge::kernels {

namespace v1 = ::pkforge::v1;

void Outcome::HarnessFault(const std::string& message) {
  if (result_.status() == Result::STATUS_UNSPECIFIED || result_.status() == Result::OK) {
    result_.set_status(Result::HARNESS_ERROR);
    result_.set_message("harness error (not the candidate's fault): " + message);
  }
}

void Outcome::End(Result::Status status, const std::string& message) {
  if (result_.status() == Result::STATUS_UNSPECIFIED || result_.status() == Result::OK) {
    result_.set_status(status);
    result_.set_message(message);
  }
}

void Outcome::AddCheck(const std::string& name, bool passed, bool flag_only,
                       const std::string& detail) {
  auto [it, inserted] = checks_.try_emplace(name);
  v1::CheatCheck& c = it->second;
  if (inserted) {
    c.set_check(name);
    c.set_passed(passed);
    c.set_flag_only(flag_only);
    c.set_detail(detail);
  } else if (!passed && c.passed()) {
    c.set_passed(false);
    c.set_detail(detail);
  }
}

void Outcome::AppendToPassedDetail(const std::string& name, const std::string& text) {
  auto it = checks_.find(name);
  if (it != checks_.end() && it->second.passed()) it->second.set_detail(it->second.detail() + text);
}

void Outcome::Cheat(const std::string& name, const std::string& detail) {
  AddCheck(name, false, false, detail);
  End(Result::CHEAT_DETECTED, name + ": " + detail);
}

bool Outcome::Failed(const std::string& name) const {
  auto it = checks_.find(name);
  return it != checks_.end() && !it->second.passed();
}

void Outcome::PublishChecks() {
  for (auto& [name, c] : checks_) *result_.add_cheat_checks() = c;
  // Failing checks first (the proto asks for failing output checks first too).
  std::stable_sort(
      result_.mutable_cheat_checks()->begin(), result_.mutable_cheat_checks()->end(),
      [](const v1::CheatCheck& a, const v1::CheatCheck& b) { return !a.passed() && b.passed(); });
}

}  // namespace pkforge::kernels
