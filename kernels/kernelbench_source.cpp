// The CUDA source of a KernelBench answer made device code for NVRTC (kernelbench_parts.h): host
// functions, bindings and host headers out; the launched kernels extern "C", as kbrl loads them.
#include <regex>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "kernelbench_parts.h"
#include "kernelbench_text.h"

namespace kbrl::kernelbench {

/// The source without its host functions (those returning tensors), PYBIND11 blocks and the host
/// headers NVRTC does not have; FLT_MAX and INFINITY defined where they were used without them.
std::string device_code(const std::string& source) {
  std::string out = source;
  static const std::regex host_fn(R"((?:^|\n)[ \t]*(?:static\s+|inline\s+)*(?:std::vector\s*<\s*)?(?:torch|at)::Tensor\s*>?\s*&?\s*[A-Za-z_]\w*\s*\()");
  for (;;) {
    const std::string blank = blank_comments(out);
    std::smatch m;
    if (blank.size() > (1u << 20) || !std::regex_search(blank, m, host_fn)) break;
    const size_t begin = static_cast<size_t>(m.position(0)) + (blank[static_cast<size_t>(m.position(0))] == '\n');
    const size_t open = static_cast<size_t>(m.position(0) + m.length(0)) - 1;
    const size_t close = matching(blank, open);
    if (close == std::string::npos) throw Unsupported("unbalanced parentheses in the CUDA source (syntax)");
    const size_t next = blank.find_first_of(";{", close);
    if (next == std::string::npos) throw Unsupported("a host function without a body (syntax)");
    const size_t end = blank[next] == ';' ? next : matching(blank, next);
    if (end == std::string::npos) throw Unsupported("unbalanced braces in the CUDA source (syntax)");
    out.erase(begin, end + 1 - begin);
  }
  for (size_t at = out.find("PYBIND11_MODULE"); at != std::string::npos; at = out.find("PYBIND11_MODULE")) {
    const size_t brace = out.find('{', at), end = brace == std::string::npos ? std::string::npos : matching(blank_comments(out), brace);
    out.erase(at, (end == std::string::npos ? out.size() : end + 1) - at);
  }
  static const std::regex host_include(R"(((?:^|\n)[ \t]*)(#[ \t]*include[ \t]*[<"](?:torch/|ATen/|c10/|pybind11/|cuda_runtime|cuda\.h|cublas|vector|iostream|cmath|math\.h|cfloat|float\.h|stdio\.h|cstdio|algorithm|cstdint|stdint\.h|limits|string)[^\n]*))");
  out = std::regex_replace(out, host_include, "$1// a host header, not for NVRTC: $2");
  std::string prelude;
  if (find_word(out, "FLT_MAX") != std::string::npos && out.find("define FLT_MAX") == std::string::npos)
    prelude += "#define FLT_MAX 3.402823466e+38F\n";
  for (const auto& [type, definition] : {std::pair{"int64_t", "long long"}, {"uint64_t", "unsigned long long"},
                                         {"int32_t", "int"}, {"uint32_t", "unsigned int"}})
    if (find_word(out, type) != std::string::npos && out.find(std::string(" ") + type + ";") == std::string::npos)
      prelude += fmt::format("typedef {} {};\n", definition, type);
  if (find_word(out, "INFINITY") != std::string::npos && out.find("define INFINITY") == std::string::npos)
    prelude += "#define INFINITY __int_as_float(0x7f800000)\n";
  return prelude + out;
}

/// The non-template __global__ kernel `name`'s parameter types; every definition and declaration
/// of it made extern "C" in `source` (kbrl loads kernels by their unmangled names).
Kernel kernel_signature(std::string& source, const std::string& name) {
  std::optional<Kernel> kernel;
  for (size_t at = find_word(blank_comments(source), name); at != std::string::npos;) {
    const std::string blank = blank_comments(source);
    const size_t open = blank.find_first_not_of(" \t\n", at + name.size());
    // A declaration or definition: __global__ before the name in the same declaration.
    const size_t decl = blank.find_last_of(";}", at);
    const std::string head = blank.substr(decl == std::string::npos ? 0 : decl + 1, at - (decl == std::string::npos ? 0 : decl + 1));
    if (open != std::string::npos && blank[open] == '(' && find_word(head, "__global__") != std::string::npos &&
        head.find('=') == std::string::npos) {
      if (const size_t t = find_word(head, "template"); t != std::string::npos) {
        // One type parameter (AT_DISPATCH's scalar_t): the kernel made the float one kbrl's tensors
        // are, its template head a typedef. Anything else stays a template kbrl cannot load by name.
        static const std::regex one_type(R"(^template\s*<\s*(?:typename|class)\s+([A-Za-z_]\w*)\s*>)");
        std::smatch m;
        const std::string from_template = head.substr(t);
        if (from_template.size() > 200 || !std::regex_search(from_template, m, one_type))
          throw Unsupported(fmt::format("kernel '{}' is a template of more than one type (template): kbrl launches "
                                        "kernels by name", name));
        const size_t begin = (decl == std::string::npos ? 0 : decl + 1) + t;
        source.replace(begin, static_cast<size_t>(m.length(0)), fmt::format("typedef float {};", m.str(1)));
        at = find_word(blank_comments(source), name);  // again, from the start: positions moved
        continue;
      }
      const size_t close = matching(blank, open);
      if (close == std::string::npos) throw Unsupported("unbalanced parentheses in the CUDA source (syntax)");
      Kernel k;
      for (const std::string& p : split_top(source.substr(open + 1, close - open - 1))) {
        size_t end = p.size();
        while (end > 0 && ident_char(p[end - 1])) --end;  // drop the parameter's name
        k.params.push_back(trim(p.substr(0, end)));
      }
      kernel = k;
      const size_t global = (decl == std::string::npos ? 0 : decl + 1) + head.find("__global__");
      if (find_word(head, "extern") == std::string::npos) {
        source.insert(global, "extern \"C\" ");
        at = find_word(blank_comments(source), name, at + 11 + name.size());
        continue;
      }
    }
    at = find_word(blank, name, at + name.size());
  }
  if (!kernel) throw Unsupported(fmt::format("no __global__ kernel '{}' in the CUDA source (statement)", name));
  return *kernel;
}

}  // namespace kbrl::kernelbench
