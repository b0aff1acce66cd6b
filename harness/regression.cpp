#include "regression.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include <kbrl/error.h>
#include <kernels/kernel_catalog.h>
#include <reference/task_registry.h>

namespace kbrl {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void check_choice(const std::string& value, std::initializer_list<const char*> allowed, const std::string& what,
                  const std::string& source) {
  for (const char* a : allowed)
    if (value == a) return;
  throw InputError(fmt::format("{}: {} '{}' is not one of {}", source, what, value, fmt::join(allowed, ", ")));
}

}  // namespace

Suite read_suite(const std::string& name_or_file) {
  Suite s;
  if (name_or_file == "known-good") {
    s.name = "known-good";
    for (const CatalogKernel& k : known_good_kernels())
      s.kernels.push_back({kernels_dir() / k.file, k.task_id, fs::path(k.file).filename().string()});
    return s;
  }
  const fs::path file(name_or_file);
  std::ifstream in(file);
  KBRL_CHECK_INPUT(in.good(), "--suite {}: neither 'known-good' nor a readable manifest file", name_or_file);
  const json j = json::parse(in, nullptr, false);
  KBRL_CHECK_INPUT(j.is_object(), "{}: not a JSON object (a suite manifest: {{\"suite\": NAME, \"kernels\": "
                   "[{{\"file\": PATH, \"task\": ID}}, ...]}})", name_or_file);
  for (const auto& [key, value] : j.items())
    KBRL_CHECK_INPUT(key == "suite" || key == "scale" || key == "mode" || key == "inputs" || key == "tolerance" ||
                         key == "kernels",
                     "{}: unknown key '{}' (suite, scale, mode, inputs, tolerance, kernels)", name_or_file, key);
  try {
    s.name = j.at("suite").get<std::string>();
    s.scale = j.value("scale", s.scale);
    s.mode = j.value("mode", s.mode);
    s.inputs = j.value("inputs", s.inputs);
    s.tolerance = j.value("tolerance", s.tolerance);
    for (const json& k : j.at("kernels")) {
      SuiteKernel sk;
      sk.file = file.parent_path() / k.at("file").get<std::string>();
      sk.task_id = k.at("task").get<int>();
      sk.name = k.at("file").get<std::string>();
      s.kernels.push_back(std::move(sk));
    }
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: {}", name_or_file, e.what()));
  }
  check_choice(s.scale, {"kernelbench", "small"}, "scale", name_or_file);
  check_choice(s.mode, {"fast", "full", "adaptive"}, "mode", name_or_file);
  check_choice(s.inputs, {"robust", "kernelbench"}, "inputs", name_or_file);
  check_choice(s.tolerance, {"strict", "legacy"}, "tolerance", name_or_file);
  KBRL_CHECK_INPUT(!s.kernels.empty(), "{}: the suite lists no kernels", name_or_file);
  std::set<std::string> names;
  for (const SuiteKernel& k : s.kernels) {
    KBRL_CHECK_INPUT(has_task(k.task_id), "{}: {}: task {} does not exist (1..100)", name_or_file, k.name, k.task_id);
    KBRL_CHECK_INPUT(fs::is_regular_file(k.file), "{}: kernel file {} does not exist", name_or_file, k.file.string());
    KBRL_CHECK_INPUT(names.insert(k.name).second, "{}: {} is listed twice", name_or_file, k.name);
  }
  return s;
}

json to_json(const Baseline& b) {
  json entries = json::array();
  for (const BaselineEntry& e : b.entries)
    entries.push_back({{"name", e.name}, {"task", e.task_id}, {"sha256", e.sha256}, {"record", json(e.record)}});
  return {{"format", "kbrl-baseline-1"},
          {"suite", {{"name", b.suite.name}, {"scale", b.suite.scale}, {"mode", b.suite.mode},
                     {"inputs", b.suite.inputs}, {"tolerance", b.suite.tolerance}}},
          {"machine", {{"gpu", b.machine.gpu}, {"arch", b.machine.arch}, {"driver", b.machine.driver},
                       {"kbrl_version", b.machine.kbrl_version}, {"commit", b.machine.commit},
                       {"compile_only", b.machine.compile_only}}},
          {"timestamp", b.timestamp},
          {"kernels", entries}};
}

Baseline baseline_from_json(const json& j, const std::string& source) {
  KBRL_CHECK_INPUT(j.is_object() && j.contains("format") && j.at("format") == "kbrl-baseline-1",
                   "{} is not a kbrl baseline (kbrl baseline writes one; format kbrl-baseline-1)", source);
  Baseline b;
  try {
    const json& s = j.at("suite");
    b.suite.name = s.at("name").get<std::string>();
    b.suite.scale = s.at("scale").get<std::string>();
    b.suite.mode = s.at("mode").get<std::string>();
    b.suite.inputs = s.at("inputs").get<std::string>();
    b.suite.tolerance = s.at("tolerance").get<std::string>();
    const json& m = j.at("machine");
    b.machine = {m.at("gpu").get<std::string>(),          m.at("arch").get<std::string>(),
                 m.at("driver").get<std::string>(),       m.at("kbrl_version").get<std::string>(),
                 m.at("commit").get<std::string>(),       m.at("compile_only").get<bool>()};
    b.timestamp = j.value("timestamp", "");
    for (const json& e : j.at("kernels"))
      b.entries.push_back({e.at("name").get<std::string>(), e.at("task").get<int>(), e.at("sha256").get<std::string>(),
                           record_from_json(e.at("record"))});
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: {}", source, e.what()));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", source, e.what()));
  }
  return b;
}

std::string machine_mismatch(const MachineInfo& baseline, const MachineInfo& now) {
  if (baseline.compile_only != now.compile_only)
    return fmt::format("the baseline was {} and this run {}", baseline.compile_only ? "compiled only" : "timed on a GPU",
                       now.compile_only ? "compiles only" : "runs on a GPU");
  if (baseline.gpu != now.gpu) return fmt::format("the baseline's GPU is {}, this one {}", baseline.gpu, now.gpu);
  if (baseline.driver != now.driver)
    return fmt::format("the baseline's CUDA driver is {}, this one {}", baseline.driver, now.driver);
  if (baseline.arch != now.arch)
    return fmt::format("the baseline compiled for {}, this run for {}", baseline.arch, now.arch);
  return {};
}

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::regression: return "regression";
    case Verdict::improvement: return "improvement";
    case Verdict::unchanged: return "unchanged";
    case Verdict::new_kernel: return "new";
  }
  return "?";
}

namespace {

std::string speedup_text(const EvalRecord& r) {
  if (r.outcome == Outcome::not_run && r.compile.ok) return "compiled";
  if (r.outcome != Outcome::ok || r.speedup <= 0) return std::string(to_string(r.outcome));
  return r.speedup_ci ? fmt::format("{:.3f}x [{:.3f}, {:.3f}]", r.speedup, r.speedup_ci->low, r.speedup_ci->high)
                      : fmt::format("{:.3f}x", r.speedup);
}

}  // namespace

bool passes(const EvalRecord& r) {
  return r.outcome == Outcome::ok || (r.outcome == Outcome::not_run && r.compile.ok);
}

KernelVerdict decide(const std::string& name, const std::optional<EvalRecord>& baseline, const EvalRecord& now,
                     double threshold) {
  KernelVerdict v{name, now.task_id, Verdict::unchanged, "", baseline, now};
  const auto set = [&](Verdict verdict, std::string detail) {
    v.verdict = verdict;
    v.detail = std::move(detail);
    return v;
  };
  if (!baseline) return set(Verdict::new_kernel, "not in the baseline: " + speedup_text(now));
  const EvalRecord& was = *baseline;
  const bool was_good = passes(was), is_good = passes(now);
  if (was_good && !is_good)
    return set(Verdict::regression, fmt::format("{} -> {}{}", to_string(was.outcome), to_string(now.outcome),
                                                now.outcome_detail.empty() ? "" : ": " + now.outcome_detail));
  if (!was_good && is_good)
    return set(Verdict::improvement, fmt::format("{} -> {}", to_string(was.outcome), to_string(now.outcome)));
  if (!is_good)
    return set(Verdict::unchanged, fmt::format("still {}", to_string(now.outcome)));
  std::vector<std::string> added;
  for (const std::string& f : now.compile.precision_findings)
    if (std::find(was.compile.precision_findings.begin(), was.compile.precision_findings.end(), f) ==
        was.compile.precision_findings.end())
      added.push_back(f);
  if (!added.empty()) return set(Verdict::regression, "new precision finding: " + fmt::format("{}", fmt::join(added, "; ")));
  if (!was.speedup_ci || !now.speedup_ci || was.speedup <= 0 || now.speedup <= 0 || !was.runtime || !now.runtime ||
      was.runtime->median_ms <= 0 || now.runtime->median_ms <= 0)
    return set(Verdict::unchanged, now.outcome == Outcome::not_run ? "compiles (not timed)" : "ok (no interval to compare)");
  const RuntimeStats &t0 = *was.runtime, &t1 = *now.runtime;
  const double longer = t1.median_ms / t0.median_ms - 1;  // > 0: the kernel takes longer now
  const std::string numbers = fmt::format("{:.4g} ms -> {:.4g} ms ({:+.1f}%), speedup {} -> {}", t0.median_ms,
                                          t1.median_ms, 100 * longer, speedup_text(was), speedup_text(now));
  const bool slower = t1.q1_ms > t0.q3_ms && now.speedup_ci->high < was.speedup_ci->low;
  const bool faster = t1.q3_ms < t0.q1_ms && now.speedup_ci->low > was.speedup_ci->high;
  if (longer > threshold && slower) return set(Verdict::regression, "slower: " + numbers);
  if (t0.median_ms / t1.median_ms - 1 > threshold && faster) return set(Verdict::improvement, "faster: " + numbers);
  if (longer > threshold || t0.median_ms / t1.median_ms - 1 > threshold)
    return set(Verdict::unchanged, "inconclusive (inside the noise): " + numbers);
  return set(Verdict::unchanged, numbers);
}

namespace {

std::string xml_escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') out += ' ';
        else out += c;
    }
  }
  return out;
}

}  // namespace

std::string junit_xml(const std::string& suite, const std::vector<KernelVerdict>& verdicts, double seconds) {
  const auto failures = std::count_if(verdicts.begin(), verdicts.end(),
                                      [](const KernelVerdict& v) { return v.verdict == Verdict::regression; });
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites>\n<testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{:.3f}\">\n",
                     xml_escape("kbrl regress " + suite), verdicts.size(), failures, seconds);
  for (const KernelVerdict& v : verdicts) {
    out += fmt::format("  <testcase classname=\"{}\" name=\"{}\">\n", xml_escape(suite),
                       xml_escape(fmt::format("{} (task {})", v.name, v.task_id)));
    if (v.verdict == Verdict::regression)
      out += fmt::format("    <failure message=\"{}\" type=\"regression\">{}</failure>\n", xml_escape(v.detail),
                         xml_escape(v.detail));
    else
      out += fmt::format("    <system-out>{}: {}</system-out>\n", to_string(v.verdict), xml_escape(v.detail));
    out += "  </testcase>\n";
  }
  return out + "</testsuite>\n</testsuites>\n";
}

std::string markdown_summary(const std::string& suite, const MachineInfo& machine,
                             const std::vector<KernelVerdict>& verdicts) {
  int regressions = 0, improvements = 0;
  for (const KernelVerdict& v : verdicts) {
    regressions += v.verdict == Verdict::regression;
    improvements += v.verdict == Verdict::improvement;
  }
  std::string out = fmt::format("## kbrl regress: {}\n\n{} kernels: {} regressions, {} improvements ({}{}, kbrl {} {})\n\n",
                                suite, verdicts.size(), regressions, improvements,
                                machine.compile_only ? "compile only, " : "", machine.gpu.empty() ? machine.arch : machine.gpu,
                                machine.kbrl_version, machine.commit);
  out += "| kernel | task | verdict | baseline | now | detail |\n|---|---|---|---|---|---|\n";
  const auto cell = [](std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    std::string out;
    for (const char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  for (const KernelVerdict& v : verdicts)
    out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", cell(v.name), v.task_id,
                       v.verdict == Verdict::regression ? "**regression**" : std::string(to_string(v.verdict)),
                       v.baseline ? cell(speedup_text(*v.baseline)) : "-", cell(speedup_text(v.now)), cell(v.detail));
  return out;
}

}  // namespace kbrl
