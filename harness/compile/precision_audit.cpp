#include "precision_audit.h"

#include <algorithm>
#include <cstdlib>
#include <array>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include <kbrl/error.h>

#include "source_scan.h"

namespace kbrl {
namespace {

constexpr std::array<std::string_view, 13> kFastIntrinsics{
    "__expf", "__exp10f", "__exp2f", "__logf", "__log2f", "__log10f", "__sinf",
    "__cosf", "__sincosf", "__tanf", "__powf", "__fdividef", "__tanhf"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string_view::npos ? s.size() - start : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

/// Adds one occurrence of `category` in `where` (the first occurrence keeps its evidence).
void record(PrecisionAudit& audit, PrecisionCategory category, std::string_view where,
            std::string_view evidence, int line) {
  for (auto& f : audit.findings) {
    if (f.category == category && f.where == where) {
      ++f.count;
      return;
    }
  }
  audit.findings.push_back({category, std::string(where), std::string(trim(evidence)), line, 1});
}

/// Calls `visit(line_number, line)` for every line of `text`.
template <typename Visit>
void for_each_line(std::string_view text, Visit visit) {
  size_t offset = 0;
  for (int number = 1; offset < text.size(); ++number) {
    const size_t end = std::min(text.find('\n', offset), text.size());
    visit(number, text.substr(offset, end - offset));
    offset = end + 1;
  }
}

bool has(const std::vector<std::string_view>& parts, std::string_view part) {
  return std::find(parts.begin(), parts.end(), part) != parts.end();
}

bool has_prefix(const std::vector<std::string_view>& parts, std::string_view prefix) {
  return std::any_of(parts.begin(), parts.end(),
                     [&](std::string_view p) { return p.substr(0, prefix.size()) == prefix; });
}

/// The categories one PTX instruction (`opcode` like "mma.sync.aligned.m16n8k8.row.col.f32.tf32")
/// shows.
std::set<PrecisionCategory> ptx_categories(std::string_view opcode) {
  std::set<PrecisionCategory> found;
  const auto parts = split(opcode, '.');
  const std::string_view base = parts.front();
  const bool approx = has(parts, "approx");
  if (has(parts, "tf32")) found.insert(PrecisionCategory::tf32);
  if (has(parts, "f16") || has(parts, "f16x2")) found.insert(PrecisionCategory::fp16);
  if (has(parts, "bf16") || has(parts, "bf16x2")) found.insert(PrecisionCategory::bf16);
  for (const char* fp8 : {"e4m3", "e5m2", "e2m3", "e3m2", "e2m1"})
    if (has_prefix(parts, fp8)) found.insert(PrecisionCategory::fp8);
  // A precise build uses these approximations inside the math library: not evidence by themselves.
  const bool library_approx =
      approx && (base == "ex2" || base == "lg2" || base == "rcp" || base == "rsqrt" || base == "div");
  if (has(parts, "ftz") && !library_approx) found.insert(PrecisionCategory::ftz);
  if (base == "sqrt" && approx) found.insert(PrecisionCategory::approx_sqrt);
  if (base == "div" && has(parts, "full")) found.insert(PrecisionCategory::approx_div);
  if ((base == "sin" || base == "cos" || base == "tanh") && approx)
    found.insert(PrecisionCategory::approx_transcendental);
  if (base == "rcp" && approx && !has(parts, "ftz") && has(parts, "f32"))
    found.insert(PrecisionCategory::approx_rcp);
  return found;
}

/// The opcode of one statement (after a '{', a label or a predicate), or "" for none.
std::string_view statement_opcode(std::string_view statement) {
  statement = trim(statement);
  while (!statement.empty() && (statement.front() == '{' || statement.front() == '}'))
    statement = trim(statement.substr(1));
  if (statement.empty() || statement.front() == '@') {
    const size_t space = statement.find_first_of(" \t");
    if (space == std::string_view::npos) return {};
    statement = trim(statement.substr(space));
  }
  const size_t end = statement.find_first_of(" \t,;{}");
  std::string_view opcode = statement.substr(0, end);
  if (opcode.empty() || opcode.front() == '.' || opcode.back() == ':' ||
      !std::isalpha(static_cast<unsigned char>(opcode.front())))
    return {};
  return opcode;
}

/// The categories of one SASS instruction (`opcode` like "HMMA.16816.F32.BF16").
std::set<PrecisionCategory> sass_categories(std::string_view opcode) {
  std::set<PrecisionCategory> found;
  const auto parts = split(opcode, '.');
  const std::string_view base = parts.front();
  const bool bf16 = has_prefix(parts, "BF16");
  const bool tf32 = has(parts, "TF32");
  if (base == "HMMA" || base == "HGMMA") {
    found.insert(tf32 ? PrecisionCategory::tf32 : bf16 ? PrecisionCategory::bf16 : PrecisionCategory::fp16);
  } else if (base == "QGMMA" || base == "QMMA") {
    found.insert(PrecisionCategory::fp8);
  } else if (base == "HADD2" || base == "HMUL2" || base == "HFMA2" || base == "HMNMX2" ||
             base == "HSETP2" || base == "HSET2" || base == "F2FP") {
    found.insert(bf16 ? PrecisionCategory::bf16 : PrecisionCategory::fp16);
  } else if (base == "MUFU") {
    if (has(parts, "SIN") || has(parts, "COS") || has(parts, "TANH"))
      found.insert(PrecisionCategory::approx_transcendental);
    if (has(parts, "SQRT")) found.insert(PrecisionCategory::approx_sqrt);
  }
  return found;
}

/// Line `number` (1-based) of `text`.
std::string_view source_line(std::string_view text, int number) {
  size_t offset = 0;
  for (int i = 1; i < number && offset < text.size(); ++i)
    offset = std::min(text.find('\n', offset), text.size()) + 1;
  if (offset >= text.size()) return {};
  return text.substr(offset, std::min(text.find('\n', offset), text.size()) - offset);
}

}  // namespace

bool PrecisionAudit::has(PrecisionCategory category) const {
  return std::any_of(findings.begin(), findings.end(),
                     [&](const PrecisionFinding& f) { return f.category == category; });
}

std::string PrecisionAudit::summary() const {
  std::vector<std::string_view> names;
  for (const auto& f : findings)
    if (std::find(names.begin(), names.end(), to_string(f.category)) == names.end())
      names.push_back(to_string(f.category));
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string_view to_string(PrecisionPolicy policy) { return enum_name(policy); }
PrecisionPolicy parse_precision_policy(std::string_view text) { return parse_enum<PrecisionPolicy>(text); }
std::string_view to_string(PrecisionCategory category) { return enum_name(category); }
PrecisionCategory parse_precision_category(std::string_view text) {
  return parse_enum<PrecisionCategory>(text);
}

bool precision_rejected(const PrecisionAudit& audit, PrecisionPolicy policy) {
  return policy == PrecisionPolicy::reject && audit.reduced_precision();
}

void audit_options(const std::vector<std::string>& options, PrecisionAudit& audit) {
  for (const auto& option : options) {
    std::string_view o = option;
    while (!o.empty() && o.front() == '-') o.remove_prefix(1);
    if (o == "use_fast_math") record(audit, PrecisionCategory::fast_math, "options", option, 0);
    if (o == "ftz=true") record(audit, PrecisionCategory::ftz, "options", option, 0);
    if (o == "prec-div=false") record(audit, PrecisionCategory::approx_div, "options", option, 0);
    if (o == "prec-sqrt=false") record(audit, PrecisionCategory::approx_sqrt, "options", option, 0);
  }
}

void audit_source(std::string_view source, PrecisionAudit& audit) {
  const std::string code = strip_comments(source);
  for_each_line(code, [&](int number, std::string_view line) {
    for (const auto name : kFastIntrinsics) {
      for (size_t pos = line.find(name); pos != std::string_view::npos; pos = line.find(name, pos + 1)) {
        const size_t after = pos + name.size();
        const bool left = pos == 0 || !(std::isalnum(static_cast<unsigned char>(line[pos - 1])) || line[pos - 1] == '_');
        const bool right = after >= line.size() || !(std::isalnum(static_cast<unsigned char>(line[after])) || line[after] == '_');
        if (left && right) {
          record(audit, PrecisionCategory::approx_intrinsic, "source", source_line(source, number), number);
          return;
        }
      }
    }
    if (line.find("asm") != std::string_view::npos && line.find(".approx") != std::string_view::npos)
      record(audit, PrecisionCategory::approx_intrinsic, "source", source_line(source, number), number);
  });
}

void audit_ptx(std::string_view ptx, PrecisionAudit& audit) {
  for_each_line(ptx, [&](int number, std::string_view line) {
    const size_t comment = line.find("//");
    if (comment != std::string_view::npos) line = line.substr(0, comment);
    std::set<PrecisionCategory> found;
    for (const auto statement : split(line, ';')) {
      const std::string_view opcode = statement_opcode(statement);
      if (!opcode.empty()) found.merge(ptx_categories(opcode));
    }
    for (const auto category : found) record(audit, category, "ptx", line, number);
  });
}

void audit_sass(std::string_view sass, PrecisionAudit& audit) {
  for_each_line(sass, [&](int number, std::string_view line) {
    // "/*0050*/  @P0 HMMA.16816.F32.BF16 R4, R4, R8, RZ ;  /* 0x... */"
    std::string code;
    for (size_t pos = 0; pos < line.size();) {
      const size_t open = line.find("/*", pos);
      code.append(line.substr(pos, open == std::string_view::npos ? line.npos : open - pos));
      if (open == std::string_view::npos) break;
      const size_t close = line.find("*/", open + 2);
      code += ' ';
      pos = close == std::string_view::npos ? line.size() : close + 2;
    }
    std::string_view s = trim(code);
    if (!s.empty() && s.front() == '@') s = trim(s.substr(std::min(s.find(' '), s.size())));
    const std::string_view opcode = s.substr(0, s.find_first_of(" \t;"));
    if (opcode.empty() || !std::isupper(static_cast<unsigned char>(opcode.front()))) return;
    for (const auto category : sass_categories(opcode)) record(audit, category, "sass", trim(line), number);
  });
}

PrecisionAudit audit_precision(std::string_view source, const std::vector<std::string>& options,
                               std::string_view ptx, std::string_view cubin) {
  PrecisionAudit audit;
  audit_options(options, audit);
  audit_source(source, audit);
  audit_ptx(ptx, audit);
  // The SASS pass is opt-in (KBRL_SASS_AUDIT=1): running nvdisasm costs about half a second per
  // compile, and ptxas uses half-precision instructions as register-move idioms (HFMA2.MMA Rx, -RZ,
  // RZ, imm, imm in every fp32 kernel seen on sm_90), so SASS alone misreads fp32 code.
  const char* sass_env = std::getenv("KBRL_SASS_AUDIT");
  if (!cubin.empty() && sass_env && std::string_view(sass_env) == "1") {
    if (const auto tool = find_sass_tool()) {
      if (const auto sass = disassemble(*tool, cubin)) {
        audit_sass(*sass, audit);
        audit.sass_inspected = true;
      }
    }
  }
  return audit;
}

}  // namespace kbrl
