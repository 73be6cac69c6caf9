#include "worker/cpu/graph_gradient_computer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/graph/model_graph.h"
#include "common/platform/status_macros.h"
#include "common/plan/model_variables.h"
#include "worker/cpu/cpu_kernels.h"
#include "worker/cpu/embedding_kernels.h"
#include "worker/cpu/thread_pool.h"
#include "worker/graph/graph_executor.h"
#include "worker/graph/losses.h"

namespace pstrain {
namespace {

class GraphGradientComputer : public GradientComputer {
 public:
  GraphGradientComputer(const ModelSpec& model, LossSpec loss, std::vector<VariableSpec> variables, int threads)
      : loss_(loss), variables_(std::move(variables)), pool_(threads) {
    input_shape_ = model.input_shape;
    ctr_ = model.is_ctr();
    fields_ = static_cast<int64_t>(model.fields.size());
    for (const EmbeddingFieldSpec& f : model.fields) {  // a bag field's Embedding layers combine its ids
      combiners_.push_back(f.combiner);
      bag_layers_.push_back(f.combiner.empty() ? std::vector<std::string>{} : f.tables);
    }
    int64_t numeric = 0, field = 0;
    for (int in : model.graph->inputs) {  // job_spec.h: float inputs take the numeric features, ids the fields
      const GraphLayerSpec& spec = model.graph->layers[in];
      InputColumns c;
      c.ids = spec.config.int_input;
      c.shape = spec.output_shape;
      c.width = 1;
      for (int64_t d : spec.output_shape) c.width *= d;
      c.offset = c.ids ? field : numeric;
      (c.ids ? field : numeric) += c.width;
      inputs_.push_back(c);
      for (int64_t j = 0; c.ids && j < c.width; ++j) {  // field c.offset + j is column j of this input
        field_column_.push_back(j);
        field_width_.push_back(c.width);
      }
    }
    output_size_ = 1;
    for (int64_t d : model.graph->layers[model.graph->output].output_shape) output_size_ *= d;
    for (int t = 0; t < threads; ++t) executors_.push_back(std::make_unique<GraphExecutor<float>>(*model.graph));
    chunk_grads_.resize(threads);
    chunk_metrics_.resize(threads);
    chunk_status_.resize(threads);
    chunk_bags_.resize(threads);
    chunk_inputs_.resize(threads);
  }

  absl::Status Compute(absl::Span<const Tensor> params, const Batch& batch, float loss_scale,
                       std::vector<Tensor>* grads, BatchMetrics* metrics) override {
    RETURN_IF_ERROR(Check(params, batch));
    grads->clear();
    for (const Tensor& p : params) grads->emplace_back(DType::kFloat32, p.shape());
    if (batch.size() == 0) return absl::OkStatus();
    SetVariables(params);
    ++calls_;
    return Run(batch, /*training=*/true, loss_scale, grads, metrics);
  }

  absl::Status Evaluate(absl::Span<const Tensor> params, const Batch& batch, BatchMetrics* metrics) override {
    RETURN_IF_ERROR(Check(params, batch));
    if (batch.size() == 0) return absl::OkStatus();
    SetVariables(params);
    return Run(batch, /*training=*/false, 0.0f, nullptr, metrics);
  }

 private:
  bool Sparse() const { return loss_.kind == LossKind::kSparseCategoricalCrossentropy; }

  absl::Status Check(absl::Span<const Tensor> params, const Batch& batch) const {
    if (params.size() != variables_.size()) {
      return absl::InvalidArgumentError(absl::StrCat("the model has ", variables_.size(), " variables but ",
                                                     params.size(), " parameters were given"));
    }
    for (size_t i = 0; i < params.size(); ++i) {
      // A table comes as the rows the batch touches (SparseLookup), [U, dim].
      const bool rows = variables_[i].sparse && params[i].rank() == 2 && params[i].dim(1) == variables_[i].shape[1];
      if (params[i].dtype() != DType::kFloat32 || (!rows && params[i].shape() != variables_[i].shape)) {
        return absl::InvalidArgumentError(absl::StrCat("parameter ", variables_[i].name, " has shape ",
                                                       ShapeString(params[i].shape()), ", the model needs float32 ",
                                                       ShapeString(variables_[i].shape)));
      }
    }
    const int64_t n = batch.size();
    int64_t in_size = 1;
    for (int64_t d : input_shape_) in_size *= d;
    if (n > 0 && (batch.inputs.dtype() != DType::kFloat32 || batch.inputs.num_elements() != n * in_size)) {
      return absl::InvalidArgumentError(absl::StrCat("batch inputs of shape ", ShapeString(batch.inputs.shape()),
                                                     " do not fit the model's input ", ShapeString(input_shape_)));
    }
    if (ctr_ && batch.positions.size() != static_cast<size_t>(n * fields_)) {
      return absl::InvalidArgumentError(absl::StrCat("a batch of ", n, " examples has ", batch.positions.size(),
                                                     " id positions; the model has ", fields_,
                                                     " fields per example (run IdDeduper first)"));
    }
    for (size_t i = 0; ctr_ && i < params.size(); ++i) {
      // Positions travel to the Embedding layers as float, exact below 2^24.
      if (variables_[i].sparse && params[i].dim(0) > (int64_t{1} << 24)) {
        return absl::InvalidArgumentError(absl::StrCat("table ", variables_[i].name, ": ", params[i].dim(0),
                                                       " rows in one batch; at most 2^24, use a smaller batch"));
      }
    }
    RETURN_IF_ERROR(CheckBags(batch));
    const size_t want = Sparse() ? static_cast<size_t>(n) : static_cast<size_t>(n * output_size_);
    const size_t have = Sparse() ? batch.labels.size() : batch.targets.size();
    if (have != want) {
      return absl::InvalidArgumentError(absl::StrCat("batch has ", n, " examples but ", have,
                                                     Sparse() ? " labels" : " targets", " (", want, " expected)"));
    }
    return absl::OkStatus();
  }

  // A bag per bag field (a multi-hot feature), none for the others, each of the batch's examples,
  // with a position per id.
  absl::Status CheckBags(const Batch& batch) const {
    if (batch.bag_positions.size() != batch.bags.size()) {
      return absl::InvalidArgumentError(absl::StrCat("batch has ", batch.bags.size(), " bags but positions for ",
                                                     batch.bag_positions.size(), " (run IdDeduper first)"));
    }
    std::vector<bool> seen(combiners_.size(), false);
    for (size_t k = 0; k < batch.bags.size(); ++k) {
      const IdBags& bag = batch.bags[k];
      if (bag.field < 0 || bag.field >= fields_ || combiners_[bag.field].empty() || seen[bag.field]) {
        return absl::InvalidArgumentError(absl::StrCat("batch bag ", k, " is of field ", bag.field,
                                                       ", which is not a bag field of the model or has two bags"));
      }
      seen[bag.field] = true;
      if (bag.examples() != batch.size() || batch.bag_positions[k].size() != bag.ids.size() ||
          (!bag.weights.empty() && bag.weights.size() != bag.ids.size())) {
        return absl::InvalidArgumentError(absl::StrCat("batch bag ", k, " (field ", bag.field, ") has ", bag.examples(),
                                                       " examples and ", bag.ids.size(), " ids for a batch of ",
                                                       batch.size(), " with ", batch.bag_positions[k].size(),
                                                       " positions"));
      }
    }
    for (size_t f = 0; f < combiners_.size(); ++f) {
      if (!combiners_[f].empty() && !seen[f] && batch.size() > 0) {
        return absl::InvalidArgumentError(absl::StrCat("field ", f, " is a bag (", combiners_[f],
                                                       ") but the batch has no bag for it"));
      }
    }
    return absl::OkStatus();
  }

  // Each bag's combiner coefficients (BagCoefficients), for the Embedding layers to combine by.
  void PrepareBags(const Batch& batch) {
    coef_.resize(batch.bags.size());
    for (size_t k = 0; k < batch.bags.size(); ++k) {
      const IdBags& bag = batch.bags[k];
      BagCoefficients(combiners_[bag.field], bag.offsets.data(), bag.examples(),
                      bag.weights.empty() ? nullptr : bag.weights.data(), &coef_[k]);
    }
  }

  // The parameters as the executor's named arrays (one copy per call, shared by the threads).
  void SetVariables(absl::Span<const Tensor> params) {
    for (size_t i = 0; i < params.size(); ++i) {
      Array<float>& a = variables_by_name_[variables_[i].name];
      a.shape = params[i].shape();
      a.data.assign(params[i].data<float>(), params[i].data<float>() + params[i].num_elements());
    }
  }

  absl::Status Run(const Batch& batch, bool training, float loss_scale, std::vector<Tensor>* grads,
                   BatchMetrics* metrics) {
    int64_t in_size = 1;
    for (int64_t d : input_shape_) in_size *= d;
    PrepareBags(batch);
    const int chunks = pool_.RunChunks(batch.size(), [&](int t, int64_t begin, int64_t count) {
      chunk_metrics_[t] = BatchMetrics{};
      chunk_bags_[t].clear();
      for (size_t k = 0; k < batch.bags.size(); ++k) {  // the chunk's examples start at `begin`
        const int field = batch.bags[k].field;
        const EmbeddingBags view{batch.bags[k].offsets.data() + begin, batch.bag_positions[k].data(), coef_[k].data()};
        for (const std::string& layer : bag_layers_[field]) {
          std::vector<EmbeddingBags>& columns = chunk_bags_[t][layer];  // one-id columns stay null
          columns.resize(field_width_[field]);
          columns[field_column_[field]] = view;
        }
      }
      chunk_status_[t] = RunChunk(*executors_[t], batch, chunk_bags_[t], begin, count, in_size, training, loss_scale,
                                  &chunk_inputs_[t], grads == nullptr ? nullptr : &chunk_grads_[t],
                                  &chunk_metrics_[t]);
    });
    for (int t = 0; t < chunks; ++t) RETURN_IF_ERROR(chunk_status_[t]);
    for (int t = 0; t < chunks; ++t) {
      AddBatchMetrics(chunk_metrics_[t], metrics);
      if (grads == nullptr) continue;
      for (size_t i = 0; i < variables_.size(); ++i) {
        auto it = chunk_grads_[t].find(variables_[i].name);
        if (it == chunk_grads_[t].end()) continue;  // a variable the output does not depend on
        ActiveCpuKernels().add((*grads)[i].data<float>(), it->second.data.data(), it->second.size());
      }
      AddMovingDeltas(*executors_[t], static_cast<float>(chunk_metrics_[t].examples) * loss_scale, grads);
    }
    return absl::OkStatus();
  }

  // The non-trainable variables' "gradients": the additive updates of the moving statistics,
  // (new - moving) = (batch statistic - moving) * (1 - momentum) of the chunk, scaled by its share
  // of the global batch like the gradients, so the parts of one step add up to one Keras update.
  void AddMovingDeltas(const GraphExecutor<float>& executor, float share, std::vector<Tensor>* grads) const {
    const NamedArrays<float> updates = executor.MovingUpdates();
    for (size_t i = 0; i < variables_.size() && !updates.empty(); ++i) {
      auto it = updates.find(variables_[i].name);
      if (variables_[i].trainable || it == updates.end()) continue;
      const float* moving = variables_by_name_.at(variables_[i].name).data.data();
      float* g = (*grads)[i].data<float>();
      for (size_t k = 0; k < it->second.data.size(); ++k) g[k] += (it->second.data[k] - moving[k]) * share;
    }
  }

  absl::Status RunChunk(GraphExecutor<float>& executor, const Batch& batch,
                        const std::map<std::string, std::vector<EmbeddingBags>>& bags, int64_t begin, int64_t count,
                        int64_t in_size, bool training, float loss_scale, std::vector<Array<float>>* buffers,
                        NamedArrays<float>* grads, BatchMetrics* metrics) const {
    std::vector<Array<float>>& inputs = *buffers;  // storage of earlier steps, swapped with the executor's
    inputs.resize(inputs_.size());
    for (size_t k = 0; k < inputs_.size(); ++k) {  // columns of batch.inputs or of the ids' positions
      const InputColumns& c = inputs_[k];
      inputs[k].shape = {count};
      inputs[k].shape.insert(inputs[k].shape.end(), c.shape.begin(), c.shape.end());
      inputs[k].data.resize(count * c.width);
      float* out = inputs[k].data.data();
      for (int64_t b = 0; b < count; ++b) {
        if (c.ids) {
          const int32_t* p = batch.positions.data() + (begin + b) * fields_ + c.offset;
          for (int64_t j = 0; j < c.width; ++j) out[b * c.width + j] = static_cast<float>(p[j]);
        } else {
          const float* x = batch.inputs.data<float>() + (begin + b) * in_size + c.offset;
          std::copy(x, x + c.width, out + b * c.width);
        }
      }
    }
    ForwardOptions options;
    options.training = training;
    options.seed = static_cast<uint64_t>(begin);
    options.step = calls_;
    if (!bags.empty()) options.bags = &bags;
    ASSIGN_OR_RETURN(const Array<float>* output, executor.Forward(&inputs, variables_by_name_, options));
    Array<float> labels;
    if (Sparse()) {
      labels.shape = {count};
      for (int64_t i = 0; i < count; ++i) labels.data.push_back(static_cast<float>(batch.labels[begin + i]));
    } else {
      labels.shape = output->shape;
      const float* y = batch.targets.data() + begin * output_size_;
      labels.data.assign(y, y + count * output_size_);
    }
    Array<float> doutput;
    ASSIGN_OR_RETURN(const double mean_loss, ComputeLoss(loss_, *output, labels, &doutput));
    Score(*output, labels, count, metrics);
    metrics->loss_sum += mean_loss * static_cast<double>(count);
    if (grads == nullptr) return absl::OkStatus();
    const float scale = static_cast<float>(count) * loss_scale;
    for (float& d : doutput.data) d *= scale;
    return executor.Backward(doutput, grads);  // overwrites, keeping the storage across calls
  }

  void Score(const Array<float>& output, const Array<float>& labels, int64_t count, BatchMetrics* metrics) const {
    metrics->examples += count;
    const int64_t cols = output_size_;
    for (int64_t i = 0; i < count; ++i) {
      const float* row = output.data.data() + i * cols;
      if (Sparse()) {
        const int64_t predicted = std::max_element(row, row + cols) - row;
        metrics->correct += predicted == static_cast<int64_t>(labels.data[i]);
      } else if (loss_.kind == LossKind::kBinaryCrossentropy) {
        // AUC ranks examples, so probabilities are mapped back to logits (a monotone map).
        const float p = std::clamp(row[0], 1e-7f, 1.0f - 1e-7f);
        const float logit = loss_.from_logits ? row[0] : std::log(p / (1.0f - p));
        const float label = labels.data[i * cols];
        metrics->correct += (logit > 0.0f) == (label > 0.5f);
        metrics->logits.push_back(logit);
        metrics->labels.push_back(label);
      }
    }
  }

  // Where a graph input's values are in a batch: columns of batch.inputs (all of them for a model of
  // one float input), or of batch.positions (a CTR model's ids).
  struct InputColumns {
    bool ids = false;
    std::vector<int64_t> shape;  // per example
    int64_t offset = 0, width = 1;
  };

  const LossSpec loss_;
  const std::vector<VariableSpec> variables_;
  std::vector<int64_t> input_shape_;
  bool ctr_ = false;
  int64_t fields_ = 0;
  std::vector<InputColumns> inputs_;
  int64_t output_size_ = 1;
  ThreadPool pool_;
  std::vector<std::unique_ptr<GraphExecutor<float>>> executors_;
  NamedArrays<float> variables_by_name_;
  std::vector<NamedArrays<float>> chunk_grads_;
  std::vector<std::vector<Array<float>>> chunk_inputs_;  // per thread: the model inputs' storage
  std::vector<BatchMetrics> chunk_metrics_;
  std::vector<absl::Status> chunk_status_;
  std::vector<std::string> combiners_;                    // per field: "" or its bag combiner
  std::vector<std::vector<std::string>> bag_layers_;      // per bag field: the Embedding layers it feeds
  std::vector<std::vector<float>> coef_;                  // per batch bag: each id's coefficient
  std::vector<int64_t> field_column_, field_width_;      // per field: its column in its input, the input's width
  // Per thread: its chunk's bags by layer, one entry per input column.
  std::vector<std::map<std::string, std::vector<EmbeddingBags>>> chunk_bags_;
  int64_t calls_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GradientComputer>> NewGraphGradientComputer(const ModelSpec& model, int threads) {
  if (threads < 1) return absl::InvalidArgumentError(absl::StrCat("threads must be at least 1, got ", threads));
  ASSIGN_OR_RETURN(LossSpec loss, ParseLoss(model.loss, model.from_logits));
  ASSIGN_OR_RETURN(std::vector<VariableSpec> variables, ModelVariables(model));
  return std::unique_ptr<GradientComputer>(new GraphGradientComputer(model, loss, std::move(variables), threads));
}

}  // namespace pstrain
