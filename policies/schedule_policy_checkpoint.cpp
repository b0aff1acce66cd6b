// The schedule policy's checkpoints: base weights and adapters apart, each with the network sizes
// it was saved from.
#include <sstream>

#include "schedule_net.h"

namespace kbrl {

namespace {

void write_meta(torch::serialize::OutputArchive& a, const ScheduleNetConfig& c) {
  a.write("meta.sizes", torch::tensor(std::vector<int64_t>{c.hidden, c.embed, c.value_buckets, c.knob_buckets}));
}

void check_meta(torch::serialize::InputArchive& a, const ScheduleNetConfig& c, const std::filesystem::path& file) {
  torch::Tensor sizes;
  a.read("meta.sizes", sizes);
  const std::vector<int64_t> want = {c.hidden, c.embed, c.value_buckets, c.knob_buckets};
  const auto got = sizes.to(torch::kInt64).contiguous();
  KBRL_CHECK_INPUT(got.numel() == 4 && std::equal(want.begin(), want.end(), got.data_ptr<int64_t>()),
                   "{}: the checkpoint's network sizes (hidden, embed, value and knob buckets) differ "
                   "from this policy's ({}, {}, {}, {})",
                   file.string(), c.hidden, c.embed, c.value_buckets, c.knob_buckets);
}

template <class F>
void guarded_load(const std::filesystem::path& file, F&& body) {
  KBRL_CHECK_INPUT(std::filesystem::exists(file), "checkpoint {} does not exist", file.string());
  try {
    body();
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: not a schedule-policy checkpoint ({})", file.string(),
                                 e.what_without_backtrace()));
  }
}

}  // namespace

void SchedulePolicy::save_base(const std::filesystem::path& file) const {
  torch::serialize::OutputArchive a;
  write_meta(a, impl_->config);
  for (const auto& [name, t] : impl_->base) a.write("base." + name, t.detach().to(torch::kCPU));
  a.save_to(file.string());
}

void SchedulePolicy::load_base(const std::filesystem::path& file) {
  guarded_load(file, [&] {
    torch::serialize::InputArchive a;
    a.load_from(file.string());
    check_meta(a, impl_->config, file);
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : impl_->base) {
      torch::Tensor v;
      a.read("base." + name, v);
      t.copy_(v.to(t.device()));
    }
  });
  impl_->rebuild_optimizer();
}

namespace {

void write_adapter(torch::serialize::OutputArchive& a, const ScheduleNetConfig& config, const LoraConfig& lora_config,
                   const std::map<std::string, Lora>& lora) {
  write_meta(a, config);
  a.write("lora.rank", torch::tensor(std::vector<int64_t>{lora_config.rank}));
  a.write("lora.alpha", torch::tensor(std::vector<double>{lora_config.alpha}));
  for (const auto& [name, l] : lora) {
    a.write("lora." + name + ".a", l.a.detach().to(torch::kCPU));
    a.write("lora." + name + ".b", l.b.detach().to(torch::kCPU));
  }
}

}  // namespace

void SchedulePolicy::Impl::read_adapter(torch::serialize::InputArchive& a, const std::filesystem::path& source) {
  check_meta(a, config, source);
  torch::Tensor rank, alpha;
  a.read("lora.rank", rank);
  a.read("lora.alpha", alpha);
  LoraConfig read_config;
  read_config.rank = static_cast<int>(rank.item<int64_t>());
  read_config.alpha = alpha.item<double>();
  std::map<std::string, Lora> read;
  for (const char* name : kAdapted) {
    Lora l;
    a.read(std::string("lora.") + name + ".a", l.a);
    a.read(std::string("lora.") + name + ".b", l.b);
    l.a = l.a.to(device).set_requires_grad(true);
    l.b = l.b.to(device).set_requires_grad(true);
    read[name] = l;
  }
  // Only a complete read replaces the adapter.
  lora_config = read_config;
  lora = std::move(read);
  rebuild_optimizer();
}

void SchedulePolicy::save_adapter(const std::filesystem::path& file) const {
  KBRL_CHECK_INPUT(has_adapter(), "save_adapter: the policy has no adapter");
  torch::serialize::OutputArchive a;
  write_adapter(a, impl_->config, impl_->lora_config, impl_->lora);
  a.save_to(file.string());
}

void SchedulePolicy::load_adapter(const std::filesystem::path& file) {
  guarded_load(file, [&] {
    torch::serialize::InputArchive a;
    a.load_from(file.string());
    impl_->read_adapter(a, file);
  });
}

std::string SchedulePolicy::adapter_state() const {
  KBRL_CHECK_INPUT(has_adapter(), "adapter_state: the policy has no adapter");
  torch::serialize::OutputArchive a;
  write_adapter(a, impl_->config, impl_->lora_config, impl_->lora);
  std::ostringstream bytes;
  a.save_to(bytes);
  return bytes.str();
}

void SchedulePolicy::restore_adapter(const std::string& state) {
  KBRL_CHECK_INPUT(!state.empty(), "restore_adapter: empty adapter state");
  try {
    std::istringstream bytes(state);
    torch::serialize::InputArchive a;
    a.load_from(bytes);
    impl_->read_adapter(a, "<adapter state>");
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("restore_adapter: not an adapter state of this policy ({})",
                                 e.what_without_backtrace()));
  }
}

}  // namespace kbrl
