// The input sets of every task (reference_model.h): KernelBench's draw, kept bit for bit, and the
// stress set drawn law by law (the mixes of the two: input_mixes.cpp). The laws themselves (task_def.h) are here too; each family file
// picks its tasks' laws next to their definitions.
#include <algorithm>
#include <cmath>

#include <kbrl/error.h>

#include "task_def.h"

namespace kbrl {
namespace detail {
namespace {

torch::TensorOptions on(torch::Device device, torch::ScalarType dtype = torch::kFloat32) {
  return torch::TensorOptions().device(device).dtype(dtype);
}

InputDomain interval(double lo, double hi) { return {InputDomain::Kind::interval, lo, hi}; }

std::string uniform_text(double lo, double hi) {
  return fmt::format("uniform[{:g}, {:g})", lo, hi);
}

torch::Tensor uniform_tensor(const TensorSpec& in, torch::Device device, double lo, double hi) {
  return torch::empty(in.shape, on(device)).uniform_(lo, hi);
}

/// The laws of `set` for this spec, one per input.
std::vector<InputLaw> laws_of(const TaskSpec& spec, InputSet set) {
  const TaskDef& def = task_def(spec.id);
  std::vector<InputLaw> laws;
  if (set == InputSet::stress) {
    laws = def.stress_laws(spec);
  } else if (def.kernelbench_laws) {
    laws = def.kernelbench_laws(spec);
  } else {
    laws = every_input(uniform(0, 1))(spec);
  }
  KBRL_ASSERT(laws.size() == spec.inputs.size(), "task {} declares {} {} laws for {} inputs",
              spec.id, laws.size(), to_string(set), spec.inputs.size());
  return laws;
}

}  // namespace

InputLaw uniform(double lo, double hi) {
  return {"~ " + uniform_text(lo, hi), interval(lo, hi),
          [lo, hi](const TensorSpec& in, torch::Device device) {
            return uniform_tensor(in, device, lo, hi);
          },
          /*elementwise=*/true};
}

InputLaw shifted_uniform(double lo, double hi, double shift, std::vector<int64_t> varying_dims,
                         std::string per) {
  std::string text = fmt::format("~ {} + {:g}*o, o uniform over {{-1, 0, 1}}, one o per {}",
                                 uniform_text(lo, hi), shift, per);
  return {std::move(text), interval(lo - shift, hi + shift),
          [=](const TensorSpec& in, torch::Device device) {
            std::vector<int64_t> offset_shape(in.shape.size(), 1);
            for (int64_t d : varying_dims) offset_shape.at(d) = in.shape.at(d);
            auto x = uniform_tensor(in, device, lo, hi);
            return x.add_(torch::randint(-1, 2, offset_shape, on(device)), shift);
          }};
}

InputLaw symmetric_uniform(double lo, double hi) {
  InputDomain domain = interval(lo, hi);
  domain.structure = InputDomain::Structure::symmetric;
  return {"= (u + u^T)/2, u ~ " + uniform_text(lo, hi), domain,
          [lo, hi](const TensorSpec& in, torch::Device device) {
            auto u = uniform_tensor(in, device, lo, hi);
            return (u + u.t()).div_(2);
          }};
}

InputLaw triangular_uniform(double lo, double hi, bool upper) {
  InputDomain domain = interval(std::min(lo, 0.0), std::max(hi, 0.0));
  domain.structure = upper ? InputDomain::Structure::upper_triangular
                           : InputDomain::Structure::lower_triangular;
  return {fmt::format("= {}(u), u ~ {}", upper ? "triu" : "tril", uniform_text(lo, hi)), domain,
          [lo, hi, upper](const TensorSpec& in, torch::Device device) {
            auto u = uniform_tensor(in, device, lo, hi);
            return upper ? u.triu_() : u.tril_();
          }};
}

InputLaw signed_log_uniform(double w) {
  // exp in fp32 may round one ulp above e^w.
  const double bound = std::exp(w) * (1 + 1e-6);
  return {fmt::format("= s*exp(u), s = -1 or +1 equally likely, u ~ uniform[{:g}, {:g})", -w, w),
          interval(-bound, bound), [w](const TensorSpec& in, torch::Device device) {
            auto x = uniform_tensor(in, device, -w, w).exp_();
            auto s = torch::randint(0, 2, in.shape, on(device));
            return x.mul_(s.mul_(2).sub_(1));
          },
          /*elementwise=*/true};
}

InputLaw softmax_rows(double lo, double hi) {
  return {"= softmax over the last dim of logits ~ " + uniform_text(lo, hi),
          {InputDomain::Kind::probability_rows, 0.0, 1.0},
          [lo, hi](const TensorSpec& in, torch::Device device) {
            return uniform_tensor(in, device, lo, hi).softmax(-1);
          }};
}

InputLaw class_indices(int64_t classes) {
  return {fmt::format("~ uniform integers in [0, {})", classes),
          {InputDomain::Kind::class_index, 0.0, static_cast<double>(classes)},
          [classes](const TensorSpec& in, torch::Device device) {
            return torch::randint(0, classes, in.shape, on(device, torch::kInt64));
          }};
}

InputLaw signs() {
  return {"= -1 or +1 equally likely", {InputDomain::Kind::sign, -1.0, 1.0},
          [](const TensorSpec& in, torch::Device device) {
            return torch::randint(0, 2, in.shape, on(device)).mul_(2).sub_(1);
          }};
}

InputLaw bool_mask() {
  return {"~ bool, true with probability 1/2", {InputDomain::Kind::mask, 0.0, 1.0},
          [](const TensorSpec& in, torch::Device device) {
            // One byte per element: the kernelbench-scale mask has 2^30 of them.
            return torch::randint(0, 2, in.shape, on(device, torch::kUInt8)).to(torch::kBool);
          }};
}

InputLaw declared(std::string text, InputDomain domain) {
  return {std::move(text), domain, nullptr};
}

InputLaws every_input(InputLaw law) {
  return [law = std::move(law)](const TaskSpec& spec) {
    return std::vector<InputLaw>(spec.inputs.size(), law);
  };
}

InputLaws per_input(std::vector<InputLaw> laws) {
  return [laws = std::move(laws)](const TaskSpec&) { return laws; };
}

}  // namespace detail

Tensors make_inputs(const TaskSpec& spec, uint64_t seed, torch::Device device, InputSet set) {
  if (set == InputSet::outliers || set == InputSet::mixture)
    return detail::make_mixed_inputs(spec, seed, device, set);
  torch::manual_seed(seed);
  const auto& def = detail::task_def(spec.id);
  Tensors inputs;
  if (set == InputSet::kernelbench) {
    if (def.make_inputs) return def.make_inputs(spec, device);
    for (const auto& in : spec.inputs) {
      KBRL_ASSERT(in.dtype == DType::f32, "task {} input {} is not float32: it needs make_inputs",
                  spec.id, in.name);
      inputs.push_back(torch::rand(in.shape, torch::TensorOptions().device(device)));
    }
    return inputs;
  }
  const auto laws = detail::laws_of(spec, set);
  for (size_t i = 0; i < laws.size(); ++i) {
    const TensorSpec& in = spec.inputs[i];
    KBRL_ASSERT(laws[i].draw, "task {} input {}: its {} law has no draw", spec.id, in.name,
                to_string(set));
    auto tensor = laws[i].draw(in, device);
    KBRL_ASSERT(tensor.scalar_type() == to_torch(in.dtype) && tensor.sizes().vec() == in.shape,
                "task {} input {}: the {} law drew a {} tensor of shape {}", spec.id, in.name,
                to_string(set), std::string(c10::toString(tensor.scalar_type())),
                format_shape(tensor.sizes().vec()));
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

std::string describe_inputs(const TaskSpec& spec, InputSet set) {
  if (set == InputSet::outliers || set == InputSet::mixture) return detail::describe_mixed(spec, set);
  const auto laws = detail::laws_of(spec, set);
  std::string text;
  for (size_t i = 0; i < laws.size(); ++i) {
    if (i) text += "; ";
    text += spec.inputs[i].name + " " + laws[i].text;
  }
  return text;
}

std::vector<InputDomain> input_domains(const TaskSpec& spec, InputSet set) {
  if (set == InputSet::outliers || set == InputSet::mixture) return detail::mixed_domains(spec);
  std::vector<InputDomain> domains;
  for (const auto& law : detail::laws_of(spec, set)) domains.push_back(law.domain);
  return domains;
}

}  // namespace kbrl
