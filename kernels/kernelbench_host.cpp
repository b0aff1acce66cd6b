// The host function of a KernelBench-format answer read as a kbrl launch plan (kernelbench_parts.h):
// its size arithmetic becomes plan expressions over the task's shapes (kernels/expression.h), its
// launches `// kbrl: launch` lines, and the rest of the CUDA source the candidate's device code.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "expression.h"
#include "kernelbench_parts.h"
#include "kernelbench_text.h"
#include "kernelbench_values.h"

namespace kbrl::kernelbench {
namespace {

/// The plan argument of one launch argument for a kernel parameter of C++ type `type`.
std::string launch_arg(Host& host, std::string arg, const std::string& type) {
  const bool pointer = type.find('*') != std::string::npos;
  static const std::regex data_ptr(R"(^\(?\s*(?:\([^()]*\*\s*\)|(?:reinterpret_cast|static_cast)\s*<[^<>]*>)?\s*\(?\s*([A-Za-z_]\w*)\s*\.\s*(?:data_ptr|data|mutable_data_ptr|const_data_ptr)\s*(<\s*([\w:]+)\s*>)?\s*\(\s*\)\s*\)?\s*\)?$)");
  std::smatch m;
  if (pointer) {
    if (arg.size() < 300 && std::regex_match(arg, m, data_ptr)) {
      if (m[3].matched && m[3] != "float" && m[3] != "scalar_t")
        throw Unsupported(fmt::format("'{}' reads a tensor as {} (template): kbrl's tensors are float", arg, std::string(m[3])));
      arg = m[1];
    }
    auto it = host.names.find(trim(arg));
    if (it == host.names.end()) throw Unsupported(fmt::format("the pointer argument '{}' is not read (statement)", arg.substr(0, 80)));
    const Value& v = it->second;
    if (v.kind == Value::Kind::pointer) return v.expr;
    if (v.kind == Value::Kind::tensor) return "in:" + host.tensor_name(v);
    if (v.kind == Value::Kind::output) return "out:" + host.tensor_name(v);
    throw Unsupported(fmt::format("the pointer argument '{}' is not a tensor's data (statement)", arg.substr(0, 80)));
  }
  if (type.find("double") != std::string::npos) throw Unsupported("a kernel takes a double (statement)");
  const Value v = host.eval(arg);
  if (type.find("float") != std::string::npos) {
    if (v.kind == Value::Kind::number) return fmt::format("f32:{}", v.number);
    if (v.kind == Value::Kind::integer) return fmt::format("f32:{}", evaluate_expression(v.expr, host.task()));
    if (v.kind == Value::Kind::scalar) return v.expr;
    throw Unsupported(fmt::format("the float argument '{}' is not read (statement)", arg.substr(0, 80)));
  }
  if (v.kind != Value::Kind::integer) throw Unsupported(fmt::format("the integer argument '{}' is not read (statement)", arg.substr(0, 80)));
  const bool wide = type.find("int64") != std::string::npos || type.find("long") != std::string::npos ||
                    type.find("size_t") != std::string::npos || type.find("ptrdiff") != std::string::npos;
  return (wide ? "i64:" : "i32:") + v.expr;
}

/// The statements of a function body (blanked text): `;`-terminated, or a braced block with what
/// precedes it (`if (...) { ... }`).
std::vector<std::string> body_statements(const std::string& body) {
  std::vector<std::string> out;
  std::string current;
  int depth = 0;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') --depth;
    if (c == '{' && depth == 0) {
      const size_t close = matching(body, i);
      if (close == std::string::npos) throw Unsupported("unbalanced braces in the host function (syntax)");
      out.push_back(trim(current + body.substr(i, close - i + 1)));
      current.clear();
      i = close;
      continue;
    }
    if (c == ';' && depth == 0) {
      if (!trim(current).empty()) out.push_back(trim(current));
      current.clear();
      continue;
    }
    current += c;
  }
  if (!trim(current).empty()) throw Unsupported("the host function's last statement has no ';' (syntax)");
  return out;
}

bool starts_with_word(const std::string& s, std::string_view word) {
  return s.rfind(word, 0) == 0 && (s.size() == word.size() || !ident_char(s[word.size()]));
}

/// A launch's grid or block: a dim3's name, dim3(...) written in place, or one integer expression.
std::string dims_of(Host& host, const std::string& text) {
  const std::string t = trim(text);
  if (auto it = host.names.find(t); it != host.names.end() && it->second.kind == Value::Kind::dims) {
    std::string joined;
    for (const std::string& d : it->second.dims) joined += (joined.empty() ? "" : ",") + d;
    return joined;
  }
  if (t.rfind("dim3", 0) == 0) {
    const size_t open = t.find_first_of("({");
    std::string joined;
    for (const std::string& d : split_top(t.substr(open + 1, t.size() - open - 2)))
      joined += (joined.empty() ? "" : ",") + host.integer(d);
    return joined;
  }
  return host.integer(t);
}

struct Plan {
  std::vector<std::string> lines;  // `// kbrl:` lines: scratch buffers and launches, in order
  std::string output;              // the output's name in the host function
  bool fills = false;              // a torch::zeros or ones: kbrl_import_fill is needed
};

/// An allocation: its elements (a plan expression and its value) and initial value ("" for empty).
struct Allocation {
  std::string numel;
  int64_t elements = 0;
  std::string fill;
};

std::optional<Allocation> allocation(Host& host, const std::string& rhs) {
  static const std::regex alloc(R"(^(?:torch|at)::(empty|zeros|ones)(_like)?\s*\((.*)\)$)");
  std::smatch m;
  if (rhs.size() > 2000 || !std::regex_match(rhs, m, alloc)) return std::nullopt;
  const std::vector<std::string> args = split_top(std::string(m[3]));
  if (args.empty()) throw Unsupported("an allocation without a shape (output shape)");
  Allocation a;
  a.fill = std::string(m[1]) == "empty" ? "" : std::string(m[1]) == "zeros" ? "0" : "1";
  if (m[2].matched || args[0].find(".sizes()") != std::string::npos) {  // like a tensor
    const std::string like = trim(args[0].substr(0, args[0].find('.')));
    auto it = host.names.find(like);
    if (it == host.names.end() || it->second.kind != Value::Kind::tensor)
      throw Unsupported(fmt::format("a tensor is allocated like '{}', not an input (output shape)", like));
    a.numel = "numel(" + host.tensor_name(it->second) + ")";
  } else {
    std::string shape = trim(args[0]);
    if (shape.size() >= 2 && shape.front() == '{') shape = shape.substr(1, shape.size() - 2);
    for (const std::string& d : split_top(shape)) {
      const Value v = host.eval(d);
      if (v.kind != Value::Kind::integer) throw Unsupported(fmt::format("a shape of '{}' (output shape)", d));
      a.numel += (a.numel.empty() ? "" : " * ") + (v.precedence > 1 ? "(" + v.expr + ")" : v.expr);
    }
    if (a.numel.empty()) a.numel = "1";
  }
  a.elements = evaluate_expression(a.numel, host.task());
  return a;
}

void statement(Host& host, Plan& plan, std::string& source, const std::string& s) {
  static const char* skipped[] = {"TORCH_CHECK", "TORCH_INTERNAL_ASSERT", "AT_ASSERT", "AT_CUDA_CHECK", "C10_CUDA_CHECK",
                                  "C10_CUDA_KERNEL_LAUNCH_CHECK", "cudaDeviceSynchronize", "cudaGetLastError",
                                  "cudaStreamSynchronize", "printf", "(void)"};
  for (const char* word : skipped)
    if (s.rfind(word, 0) == 0) return;
  if (s.rfind("CHECK", 0) == 0) return;  // the answer's own CHECK_INPUT-style macros
  if (s.find("cublas") != std::string::npos || s.find("CUBLAS") != std::string::npos)
    throw Unsupported("the host function calls cuBLAS: kbrl runs no host code (cuBLAS)");
  if (s.rfind("AT_DISPATCH_", 0) == 0) {
    // kbrl's tensors are float: the float branch of the dispatch is the one that runs, its lambda's
    // statements with scalar_t as float (kernel_signature makes the kernels so).
    if (s.find("FLOATING") == std::string::npos && s.find("ALL_TYPES") == std::string::npos)
      throw Unsupported("an AT_DISPATCH with no float branch (template)");
    const size_t capture = s.find("[&]") != std::string::npos ? s.find("[&]") : s.find("[=]");
    const size_t open = capture == std::string::npos ? capture : s.find('{', capture);
    const size_t close = open == std::string::npos ? open : matching(s, open);
    if (close == std::string::npos) throw Unsupported("an AT_DISPATCH without a lambda body (template)");
    for (const std::string& inner : body_statements(s.substr(open + 1, close - open - 1)))
      statement(host, plan, source, inner);
    return;
  }
  if (s.find("AT_DISPATCH") != std::string::npos)
    throw Unsupported("the host function dispatches templated kernels in a way not read (template)");
  if (starts_with_word(s, "if")) {
    const size_t close = matching(s, s.find('('));
    if (s.find("cudaSuccess", 0) < close || s.find("err", 0) < close) return;  // an error check
    throw Unsupported("the host function branches (control flow)");
  }
  for (const char* word : {"for", "while", "do", "switch", "else", "goto"})
    if (starts_with_word(s, word)) throw Unsupported(fmt::format("the host function has a '{}' (control flow)", word));
  if (const size_t launch = s.find("<<<"); launch != std::string::npos) {
    const std::string kernel = trim(s.substr(0, launch));
    const size_t close = s.find(">>>", launch);
    if (close == std::string::npos) throw Unsupported("a launch without '>>>' (syntax)");
    std::string kernel_name = kernel;
    if (const size_t lt = kernel.find('<'); lt != std::string::npos) {  // k<scalar_t> or k<float>: the float one
      const std::string arg = trim(kernel.substr(lt + 1, kernel.rfind('>') - lt - 1));
      if (arg != "scalar_t" && arg != "float")
        throw Unsupported(fmt::format("kernel '{}' is launched as a template for {} (template)", kernel, arg));
      kernel_name = trim(kernel.substr(0, lt));
    }
    const std::vector<std::string> config = split_top(s.substr(launch + 3, close - launch - 3));
    const size_t open = s.find('(', close);
    if (config.size() < 2 || open == std::string::npos) throw Unsupported("a launch without grid and block (syntax)");
    const Kernel k = kernel_signature(source, kernel_name);
    const std::vector<std::string> args = split_top(s.substr(open + 1, s.rfind(')') - open - 1));
    if (args.size() != k.params.size())
      throw Unsupported(fmt::format("kernel '{}' takes {} arguments and is launched with {} (statement)", kernel_name,
                                    k.params.size(), args.size()));
    std::string line = fmt::format("// kbrl: launch {} grid={} block={}", kernel_name, dims_of(host, config[0]), dims_of(host, config[1]));
    if (config.size() >= 3 && trim(config[2]) != "0") line += " smem=" + host.integer(config[2]);
    std::string joined;
    for (size_t i = 0; i < args.size(); ++i) joined += (i ? "," : "") + launch_arg(host, args[i], k.params[i]);
    plan.lines.push_back(line + " args=" + joined);
    return;
  }
  if (s.find("Guard") != std::string::npos || s.find("getCurrentCUDAStream") != std::string::npos ||
      s.find("cudaStream_t") != std::string::npos || s.find("cudaError_t") != std::string::npos ||
      s.find("TensorOptions") != std::string::npos)
    return;  // guards, streams, error codes, options: kbrl's own
  if (starts_with_word(s, "return")) {
    const std::string what = trim(s.substr(6));
    auto it = host.names.find(what);
    if (it != host.names.end() && it->second.kind == Value::Kind::output) return;
    if (it != host.names.end() && it->second.expr.rfind("scratch:", 0) == 0)
      throw Unsupported(fmt::format("the host function returns '{}', which is not shaped like the task's output {} "
                                    "(output shape)", what, host.task().outputs.at(0).name));
    throw Unsupported(fmt::format("the host function returns '{}', not a tensor it allocated (torch operation)", what.substr(0, 60)));
  }
  // A declaration (type, then name = value, ...) or dim3 name(...).
  const size_t eq = s.find('=');
  std::string head = trim(s.substr(0, std::min(eq, s.find_first_of("({"))));
  if (head.rfind("dim3", 0) == 0) {
    const std::string name = trim(head.substr(4));
    Value v;
    v.kind = Value::Kind::dims;
    std::string args = eq == std::string::npos ? s.substr(s.find_first_of("({")) : trim(s.substr(eq + 1));
    if (args.rfind("dim3", 0) == 0) args = trim(args.substr(4));
    for (const std::string& d : split_top(args.substr(1, args.size() - 2))) v.dims.push_back(host.integer(d));
    host.names[name] = v;
    return;
  }
  if (eq == std::string::npos || s[eq + 1] == '=') throw Unsupported(fmt::format("the host statement '{}' is not read (statement)", s.substr(0, 80)));
  // int M = a.size(0), N = b.size(1);  auto out = torch::empty_like(a);  float* p = x.data_ptr<float>();
  size_t name_end = eq;
  while (name_end > 0 && std::isspace(static_cast<unsigned char>(s[name_end - 1]))) --name_end;
  size_t name_begin = name_end;
  while (name_begin > 0 && ident_char(s[name_begin - 1])) --name_begin;
  const std::string type = trim(s.substr(0, name_begin));
  std::vector<std::pair<std::string, std::string>> declared = {{s.substr(name_begin, name_end - name_begin), ""}};
  const std::vector<std::string> parts = split_top(s.substr(eq + 1));
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const size_t e = part.find('=');
    if (i > 0 && e != std::string::npos && e > 0) {  // a further declarator: name = value
      declared.push_back({trim(part.substr(0, e)), trim(part.substr(e + 1))});
    } else if (declared.back().second.empty()) {
      declared.back().second = part;
    } else {
      declared.back().second += "," + part;
    }
  }
  for (auto& [name, rhs] : declared) {
    rhs = trim(rhs);
    if (type.empty() && host.names.count(name) && host.names[name].kind == Value::Kind::tensor &&
        rhs.rfind(name + ".contiguous()", 0) == 0)
      continue;  // x = x.contiguous();
    if (type.empty()) throw Unsupported(fmt::format("the host function assigns '{}' again (statement)", name));
    if (std::optional<Allocation> a = allocation(host, rhs)) {
      // The output: the first allocation shaped like the task's; any other is a scratch buffer.
      const TensorSpec& out = host.task().outputs.at(0);
      Value v;
      std::string target;
      if (plan.output.empty() && a->elements == out.numel()) {
        v.kind = Value::Kind::output;
        plan.output = name;
        target = "out:" + out.name;
      } else {
        std::string buffer = name;
        while (find_tensor(host.task(), buffer) || host.names.count(buffer + "_") ) buffer += "_";
        v.kind = Value::Kind::pointer;
        v.expr = target = "scratch:" + buffer;
        plan.lines.push_back(fmt::format("// kbrl: scratch {} bytes=4 * ({})", buffer, a->numel));
      }
      if (!a->fill.empty()) {
        plan.lines.push_back(fmt::format("// kbrl: launch kbrl_import_fill grid=min(cdiv({0}, 256), 65535) block=256 "
                                         "args={1},i64:{0},f32:{2}", a->numel, target, a->fill));
        plan.fills = true;
      }
      host.names[name] = v;
      continue;
    }
    static const std::regex alias(R"(^([A-Za-z_]\w*)\s*\.\s*(contiguous|cuda|float)\s*\(\s*\)$)");
    std::smatch m;
    if (rhs.size() < 200 && std::regex_match(rhs, m, alias) && host.names.count(m[1]) &&
        host.names[m[1]].kind == Value::Kind::tensor) {
      host.names[name] = host.names[m[1]];
      continue;
    }
    if (type.find('*') != std::string::npos) {  // float* p = x.data_ptr<float>();
      Value v;
      v.kind = Value::Kind::pointer;
      v.expr = launch_arg(host, rhs, "float*");
      host.names[name] = v;
      continue;
    }
    if (rhs.find("torch::") != std::string::npos || rhs.find("at::") != std::string::npos)
      throw Unsupported(fmt::format("a torch operation in the host code: '{}' (torch operation)", rhs.substr(0, 80)));
    Value v = host.eval(rhs);
    if (v.kind == Value::Kind::integer && (type.find("float") != std::string::npos || type.find("double") != std::string::npos))
      v = number_value(static_cast<double>(evaluate_expression(v.expr, host.task())));
    host.names[name] = v;
  }
}


}  // namespace

std::string translate_host_function(const PythonAnswer& answer, const TaskSpec& task) {
  if (task.outputs.size() != 1) throw Unsupported("the task has several outputs (multiple outputs)");
  const std::string& source = answer.cuda_source;
  const std::string blank = blank_comments(source);
  if (std::count(blank.begin(), blank.end(), '{') != std::count(blank.begin(), blank.end(), '}') ||
      std::count(blank.begin(), blank.end(), '(') != std::count(blank.begin(), blank.end(), ')'))
    throw Unsupported("unbalanced braces or parentheses in the CUDA source (syntax)");
  // The host function: `torch::Tensor name(params) { body }`.
  size_t open = std::string::npos, body = std::string::npos;
  for (size_t at = find_word(blank, answer.function); at != std::string::npos; at = find_word(blank, answer.function, at + 1)) {
    const std::string before = trim(blank.substr(at >= 80 ? at - 80 : 0, std::min<size_t>(at, 80)));
    const size_t paren = blank.find_first_not_of(" \t\n", at + answer.function.size());
    if (paren == std::string::npos || blank[paren] != '(' || before.size() < 6) continue;
    const size_t close = matching(blank, paren);
    const size_t brace = close == std::string::npos ? close : blank.find_first_not_of(" \t\n", close + 1);
    if (brace == std::string::npos || blank[brace] != '{') continue;  // a declaration or a call
    if (before.find("vector") != std::string::npos || before.find("tuple") != std::string::npos)
      throw Unsupported("the host function returns several tensors (multiple outputs)");
    if (before.substr(before.size() - 6) != "Tensor" && before.substr(before.size() - 7) != "Tensor&")
      throw Unsupported(fmt::format("'{}' does not return a tensor (statement)", answer.function));
    open = paren;
    body = brace;
  }
  if (open == std::string::npos)
    throw Unsupported(fmt::format("no host function '{}' with a body in the CUDA source (statement)", answer.function));
  Host host(task);
  // File-scope integer constants: #define NAME value, const/constexpr int NAME = value;
  static const std::regex define(R"(^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]+)$)");
  static const std::regex constant(R"(^[ \t]*(?:static[ \t]+)?(?:constexpr|const)[ \t]+(?:int|unsigned|int64_t|size_t|long|int32_t)[ \t]+([A-Za-z_]\w*)[ \t]*=[ \t]*([^;\n]+);)");
  size_t begin = 0;
  while (begin < open) {
    const size_t end = std::min(blank.find('\n', begin), blank.size());
    const std::string line = blank.substr(begin, end - begin);
    std::smatch m;
    if (line.size() < 300 && (std::regex_match(line, m, define) || std::regex_search(line, m, constant))) {
      try {
        const Value v = host.eval(std::string(m[2]));
        if (v.kind == Value::Kind::integer) host.names[m[1]] = v;
      } catch (const Unsupported&) {
        // not an integer constant: the device code's business
      }
    }
    begin = end + 1;
  }
  const std::vector<std::string> params = split_top(source.substr(open + 1, matching(blank, open) - open - 1));
  if (params.size() != answer.args.size())
    throw Unsupported(fmt::format("forward passes {} arguments to '{}', which takes {} (forward)", answer.args.size(),
                                  answer.function, params.size()));
  for (size_t i = 0; i < params.size(); ++i) {
    size_t end = params[i].size();
    while (end > 0 && ident_char(params[i][end - 1])) --end;
    const std::string type = params[i].substr(0, end), name = params[i].substr(end);
    const CallArg& arg = answer.args[i];
    Value v;
    if (type.find("Tensor") != std::string::npos) {
      if (arg.kind != CallArg::Kind::input) throw Unsupported(fmt::format("'{}' takes a tensor but forward passes none (forward)", name));
      v.kind = Value::Kind::tensor;
      v.tensor = arg.index;
    } else if (arg.kind == CallArg::Kind::scalar) {
      v.kind = Value::Kind::scalar;
      v.expr = "scalar:" + task.scalars.at(static_cast<size_t>(arg.index)).name;
    } else if (arg.kind == CallArg::Kind::number) {
      const bool is_float = type.find("float") != std::string::npos || type.find("double") != std::string::npos;
      v = is_float ? number_value(arg.number) : integer_value(std::to_string(static_cast<int64_t>(arg.number)));
    } else {
      throw Unsupported(fmt::format("'{}' takes a number but forward passes a tensor (forward)", name));
    }
    host.names[name] = v;
  }
  std::string device = device_code(source);
  Plan plan;
  for (const std::string& s : body_statements(blank.substr(body + 1, matching(blank, body) - body - 1)))
    statement(host, plan, device, s);
  if (std::none_of(plan.lines.begin(), plan.lines.end(), [](const std::string& l) {
        return l.rfind("// kbrl: launch", 0) == 0 && l.find("kbrl_import_fill") == std::string::npos;
      }))
    throw Unsupported("the host function launches no kernel (statement)");
  if (plan.output.empty()) throw Unsupported("the host function allocates no output (statement)");
  std::string file = fmt::format("// Imported by kbrl from a KernelBench-format answer: the device code of its load_inline "
                                 "source, launched as its host function '{}' did.\n", answer.function);
  if (plan.fills)
    device += "\nextern \"C\" __global__ void kbrl_import_fill(float* y, long long n, float v) {\n"
              "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)\n"
              "    y[i] = v;\n}\n";
  for (const std::string& line : plan.lines) file += line + "\n";
  return file + device;
}

}  // namespace kbrl::kernelbench
