// The job spec: what to train (a Keras-Sequential-like model, or a CTR model: embedding tables
// per categorical field and numeric inputs feeding a dense tower), with which optimizer, on which
// data, for how long, partitioned how, in which mode. Parsed from JSON (a file or a preset), with
// every field validated and named in errors ("model.layers[2].units must be positive").
// Thread-safety: plain values.
#ifndef PSTRAIN_COMMON_CONFIG_JOB_SPEC_H_
#define PSTRAIN_COMMON_CONFIG_JOB_SPEC_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/initializer_spec.h"
#include "common/plan/partitioner.h"
#include "nlohmann/json.hpp"

namespace pstrain {

struct ModelGraph;  // common/graph/model_graph.h

struct LayerSpec {
  std::string type;            // dense, conv2d, max_pool2d, flatten, relu
  std::string name;            // Keras-style automatic name when not given: dense, dense_1, conv2d, ...
  int64_t units = 0;           // dense
  int64_t filters = 0;         // conv2d
  int64_t kernel_size = 0;     // conv2d (square kernels, stride 1)
  std::string padding = "valid";  // conv2d: valid | same
  int64_t pool_size = 2;       // max_pool2d (stride = pool_size)
  std::string activation;      // "" / "linear" or "relu" (dense, conv2d)
  bool use_bias = true;
  InitializerSpec kernel_initializer{"glorot_uniform"};
  InitializerSpec bias_initializer{"zeros"};
};

// One categorical input of a CTR model, looked up in its own embedding table (Keras Embedding):
// a [vocabulary_size, embedding_dim] float32 variable "<name>/embeddings" whose rows move sparsely.
// A table without a vocabulary (a field's "dynamic" in a job spec): its keys are the raw 64-bit ids
// (bytes features hashed with FNV-1a 64), shard i of n ps tasks holds the keys with
// DynamicKeyOwner(key, n) == i (common/plan/dynamic_key_owner.h) in a hash map, and a row is made on
// the first push of its key (ps/store/dynamic_table.h has the rules).
struct DynamicTableSpec {
  int64_t admission_threshold = 1;  // pushes a key needs before it becomes a row; 1: every key
  int64_t ttl_steps = 0;            // rows not updated for this many steps are dropped; 0: never
  // The table's declared capacity over all its shards (>= 1): each of n shards holds at most
  // ceil(max_rows / n) rows, dropping the least recently updated beyond that, and `pstrain plan`
  // budgets memory for max_rows rows.
  int64_t max_rows = 0;
};

struct EmbeddingFieldSpec {
  std::string name;             // layer name; Keras-style automatic: embedding, embedding_1, ...
  int64_t vocabulary_size = 0;  // rows: ids are in [0, vocabulary_size); 0 for a dynamic table
  int64_t embedding_dim = 0;
  // Keras Embedding's default "uniform" = RandomUniform(-0.05, 0.05).
  InitializerSpec embeddings_initializer{"random_uniform"};
  // Keras models: every Embedding layer the field's ids feed (one, or several with the same
  // input_dim, e.g. a wide and a deep table); their "<layer>/embeddings" tables share the step's
  // unique ids. Empty for the `fields` of a job spec: the table is `name`'s.
  std::vector<std::string> tables;
  // Derived from a tfrecord job's data.features, never written in model JSON: "" when the field
  // holds one id per example, else the bag combiner (sum | mean | sqrtn) of its variable-length ids.
  std::string combiner;
  // Set: the table is dynamic (no vocabulary_size; ids are taken whole, never modulo a size).
  std::optional<DynamicTableSpec> dynamic;
};

struct ModelSpec {
  // Per example, e.g. [28,28,1] (NHWC) or [2]. CTR models: derived, [numeric_inputs + sum of the
  // fields' embedding_dim] (the dense tower's input), never written in the JSON.
  std::vector<int64_t> input_shape;
  std::vector<LayerSpec> layers;
  // From logits: sparse_categorical_crossentropy, or binary_crossentropy (CTR models, one logit);
  // or "mse".
  std::string loss = "sparse_categorical_crossentropy";
  // CTR models (fields non-empty): per example, numeric_inputs floats and one id per field; the
  // numeric features then the fields' embeddings, in field order, are concatenated into the
  // input of `layers`.
  int64_t numeric_inputs = 0;
  std::vector<EmbeddingFieldSpec> fields;
  bool is_ctr() const { return !fields.empty(); }
  // A model read from a Keras to_json() ("keras_model" / "keras_json" / --model_json): its graph
  // (validated, variables with Keras's names) and the document (carried inline in the canonical
  // form, so workers and checkpoints need no file). `layers` is then empty and `input_shape` is the
  // model's one input. Losses: sparse_categorical_crossentropy, binary_crossentropy, mse.
  // A Keras model with integer inputs is a CTR model too (binary_crossentropy on criteo or
  // tfrecord data): its float inputs, in input order, take the numeric features (numeric_inputs is
  // their total width, input_shape [numeric_inputs]) and its integer inputs, in input order, one
  // field per id (an input of shape [k] takes k fields), derived into `fields`.
  std::shared_ptr<const ModelGraph> graph;
  nlohmann::json keras_model;
  // Whether the output is logits (the loss applies softmax / sigmoid) or probabilities. Inferred
  // when not given: probabilities when the output layer's activation is softmax or sigmoid.
  bool from_logits = true;
  // Keras models: "dynamic_tables" of the job spec's model, Embedding layer name -> its dynamic
  // table. The layer's input_dim is then ignored: its ids are taken whole and the table holds at
  // most max_rows rows (each such layer's field gets `dynamic`; see ModelVariables for the shape).
  std::map<std::string, DynamicTableSpec> keras_dynamic_tables;
  bool is_graph() const { return graph != nullptr; }
};

struct LearningRateSpec {
  std::string schedule = "constant";  // constant | exponential_decay | piecewise_constant
  double initial = 0.001;
  int64_t decay_steps = 0;
  double decay_rate = 1.0;
  bool staircase = false;
  std::vector<int64_t> boundaries;
  std::vector<double> values;
};

struct OptimizerSpec {
  std::string type = "adam";   // sgd | adagrad | adam | rmsprop | ftrl | lazy_adam
  LearningRateSpec learning_rate;
  double momentum = 0.0;       // sgd, rmsprop
  bool nesterov = false;       // sgd
  double beta_1 = 0.9;         // adam, lazy_adam
  double beta_2 = 0.999;       // adam, lazy_adam
  double epsilon = 1e-7;       // adagrad, adam, rmsprop, lazy_adam
  double initial_accumulator_value = 0.1;  // adagrad, ftrl
  double rho = 0.9;            // rmsprop
  bool centered = false;       // rmsprop
  // ftrl (Keras names in the job spec: learning_rate_power, l1_regularization_strength,
  // l2_regularization_strength, l2_shrinkage_regularization_strength, beta).
  double learning_rate_power = -0.5;
  double l1 = 0.0;
  double l2 = 0.0;
  double l2_shrinkage = 0.0;
  double beta = 0.0;
};

// A categorical tf.Example feature read as a bag (multi-hot): any number of ids (0..max_length),
// as tf.io.VarLenFeature reads it, embedded as combiner(rows of its ids), as
// tf.nn.embedding_lookup_sparse does. A missing feature is an empty bag (zeros).
struct TfExampleBagSpec {
  std::string combiner;  // "" (the feature is fixed-length, one id) | sum | mean | sqrtn
  std::string weights;   // "" (each id weighs 1) or a float_list feature with one weight >= 0 per id
  int64_t max_length = 0;  // most ids a bag may hold (more: a bad record)
  bool is_bag() const { return !combiner.empty(); }
};

// tfrecord data: which tf.Example features (by name) hold the label, the numeric inputs (in the
// model's order) and the categorical fields (one per model field, in order). Each is a
// fixed-length feature of one value, as tf.io.FixedLenFeature([], ...) reads it, unless
// `bags` declares it a bag.
struct TfExampleFeatureSpec {
  std::string label;                     // int64 or float, 0 or 1
  std::vector<std::string> numeric;      // float or int64
  std::vector<std::string> categorical;  // int64 ids, or bytes (hashed)
  // Empty (every field fixed-length) or one per categorical feature.
  std::vector<TfExampleBagSpec> bags;
  bool is_bag(size_t c) const { return c < bags.size() && bags[c].is_bag(); }
};

struct DataSpec {
  std::string dataset = "fashion_mnist";  // fashion_mnist | csv | synthetic_linear | criteo | tfrecord
  // fashion_mnist: the IDX files. criteo: where the default synthetic set is cached ("" = the
  // user's cache directory), used when train_files is empty.
  std::string dir = "/usr/share/datasets/fashion-mnist";
  std::string train_file;      // csv
  std::string test_file;       // csv
  int64_t label_column = -1;   // csv: -1 = last column
  bool header = false;         // csv: skip the first line
  int64_t num_examples = 0;    // synthetic_linear: training examples (test: a quarter)
  int64_t shuffle_seed = 0;    // 0: derive from the job seed
  // criteo: TSV files `label \t numeric... \t categorical...` (plain or .gz), each entry a path or
  // a glob. Both empty: the default synthetic set, generated into `dir` on first use.
  std::vector<std::string> train_files;
  std::vector<std::string> test_files;
  bool skip_bad_lines = false;  // criteo, tfrecord: skip and count bad lines / records instead of failing
  // tfrecord: TFRecord files (plain or GZIP) of tf.Example in train_files / test_files (both
  // required), mapped to the CTR model's inputs by `features`.
  TfExampleFeatureSpec features;
  // A training file that is also a test file is refused (the test metrics would mean nothing)
  // unless this is set: "allow_test_in_train": true.
  bool allow_test_in_train = false;
};

struct ScheduleSpec {
  int64_t epochs = 0;          // either epochs or steps (> 0)
  int64_t steps = 0;           // global steps of batch_size examples
  int64_t steps_per_closure = 10;  // k steps a worker runs per scheduled closure
  int64_t eval_every_steps = -1;   // -1 (not given): after every epoch; 0: only at the end
  int64_t checkpoint_every_steps = 0;
  int64_t checkpoint_every_secs = 0;
  int64_t keep_checkpoints = 5;
};

struct JobSpec {
  std::string name;
  ModelSpec model;
  OptimizerSpec optimizer;
  DataSpec data;
  int64_t batch_size = 64;     // GLOBAL batch: losses are summed and divided by it
  ScheduleSpec schedule;
  PartitionerSpec partitioner;
  std::string mode = "async";  // async | sync
  uint64_t seed = 42;
  int64_t sync_timeout_ms = 60000;
  // Stop the job when a training loss, a gradient or a variable turns NaN or infinite (Keras's
  // TerminateOnNaN), naming the step and the variable; no checkpoint is written after it.
  bool terminate_on_nan = true;
  // Stop the job as diverged when a step's mean training loss passes this many times the reference
  // loss (the lowest loss of the first 10 steps, at least 1): finite garbage (a learning rate of 1e30
  // gives losses near 1e31, never NaN) is caught before it is checkpointed. 0 turns the rule off.
  double divergence_loss_factor = 1000;
  // Backups per shard (0 or 1): with 1, every shard has a backup on the next ps round-robin that
  // the primary keeps up to date with each update it applies; a lost primary's shards are promoted
  // on their backups and no acknowledged update is lost. Async mode only; needs at least 2 ps.
  int64_t ps_replicas = 0;
};

// True for the data sets of CTR models (model.fields): criteo and tfrecord.
inline bool IsCtrDataset(const std::string& dataset) { return dataset == "criteo" || dataset == "tfrecord"; }

// Parses and validates a job spec document. InvalidArgument naming the field on any problem: a
// wrong type, a value outside its range (Keras's, TensorFlow's or PyTorch's checks where they have
// them), or a key no field has (naming the nearest known key).
absl::StatusOr<JobSpec> JobSpecFromJson(const nlohmann::json& doc);

// The canonical JSON form (every field explicit); JobSpecFromJson(JobSpecToJson(s)) == s.
nlohmann::json JobSpecToJson(const JobSpec& spec);

// Command-line overrides of a criteo or tfrecord job's data files (--train_files / --test_files): each a
// comma-separated list of paths or globs, "" leaving that split as it is. InvalidArgument naming
// `flag_prefix` + the flag when the job is not a criteo or tfrecord job, or when only one split would then
// have files (give both, or neither for the default synthetic set).
absl::Status OverrideCtrDataFiles(const std::string& train_files, const std::string& test_files,
                                  const std::string& flag_prefix, JobSpec* job);

// Makes `model` the Keras model `doc` (a to_json() document), keeping its loss; `what` prefixes
// errors. InvalidArgument for a model the graph reader refuses (naming the layer and key) or one
// that a job's dataset cannot feed (several float inputs without ids, ids feeding a layer other
// than Embedding) or whose variables the ps cannot update (moving statistics).
absl::Status SetKerasModel(const nlohmann::json& doc, const std::string& what, ModelSpec* model);

// --model_json=PATH (`flag` names it in errors): replaces the job's model with the Keras model in
// PATH, keeping the loss; "" leaves the job as it is. InvalidArgument, the job unchanged, when the
// model does not fit the job's data (id inputs need CTR data and binary_crossentropy).
absl::Status OverrideModelJson(const std::string& path, const std::string& flag, JobSpec* job);

// OK when `spec.ps_replicas` fits a cluster of `num_ps` ps tasks (each shard's backups on other ps
// tasks than its primary); InvalidArgument naming the limit otherwise.
absl::Status CheckPsReplicas(const JobSpec& spec, int num_ps);

// Loads `name_or_path`: a preset name (see job_presets.h) or a JSON file path. A file's
// model.keras_json (a path, relative to the job file's folder) is read here into model.keras_model.
absl::StatusOr<JobSpec> LoadJobSpec(const std::string& name_or_path);

}  // namespace pstrain

#endif  // PSTRAIN_COMMON_CONFIG_JOB_SPEC_H_
