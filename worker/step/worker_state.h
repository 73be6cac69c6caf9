// Worker's private state: the job Configure builds and each data part's context, shared by
// worker.cc (configuration, evaluation) and worker_steps.cc (the step loops of RunSteps).
// Thread-safety: as the fields say; a part's context is used under its `mu`.
#ifndef PSTRAIN_WORKER_STEP_WORKER_STATE_H_
#define PSTRAIN_WORKER_STEP_WORKER_STATE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/config/job_spec.h"
#include "common/plan/model_variables.h"
#include "worker/data/dataset.h"
#include "worker/data/shard_iterator.h"
#include "worker/exchange/variable_exchange.h"
#include "worker/step/divergence_check.h"
#include "worker/step/worker.h"

namespace pstrain {

// What one data part's closures need: its examples, and buffers of their own so closures of two
// parts (this worker's own and a lost worker's, re-run here) can run at the same time.
struct Worker::PartContext {
  absl::Mutex mu;          // one closure of this part at a time
  int part = 0;
  int64_t batch = 0;       // this part's examples per step
  float loss_scale = 1.f;  // 1 / (examples one ps update covers)
  // Clients of their own: a connection may carry one call at a time, and this part's pull must
  // not queue behind another part's push that the ps parks until this part arrives (sync mode).
  std::vector<std::unique_ptr<PsClient>> ps;
  std::unique_ptr<VariableExchange> exchange;
  // OverlapsPushes: the exchange a step's push runs on while the next step pulls on `exchange`,
  // with that push's gradients and rows (swapped with grads and lookup). Null otherwise.
  std::unique_ptr<VariableExchange> push_exchange;
  std::unique_ptr<ReplicaSet> replicas;
  std::unique_ptr<ShardIterator> train;
  std::vector<Tensor> params, grads;
  Batch batch_buffer;
  std::unique_ptr<IdDeduper> dedupe;  // CTR models: the step's unique ids per table
  SparseLookup lookup;
  std::vector<Tensor> push_grads;  // push_exchange's
  SparseLookup push_lookup;
  LossGrowthCheck loss_growth{0};  // the job's divergence_loss_factor, set when the part is built
};

struct Worker::Job {
  JobSpec spec;
  std::vector<VariableSpec> variables;
  VariablePlanProto plan;  // replaced by Reassign under mu
  int worker_index = 0, num_workers = 1;
  bool sync = false;
  std::vector<std::string> ps_addresses;
  std::shared_ptr<const Dataset> test;
  std::shared_ptr<const Dataset> all_train;  // non-CTR jobs: every part's examples
  absl::Mutex mu;  // guards parts; held while a part's context is built (CTR: its files loaded)
  std::map<int, std::unique_ptr<PartContext>> parts ABSL_GUARDED_BY(mu);
};

}  // namespace pstrain

#endif  // PSTRAIN_WORKER_STEP_WORKER_STATE_H_
