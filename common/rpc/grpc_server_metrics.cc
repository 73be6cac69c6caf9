#include "common/rpc/grpc_server_metrics.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_interceptor.h"

namespace pstrain {
namespace {

constexpr const char* kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

// "/pstrain.PsService/Pull" -> {"pstrain.PsService", "Pull"}.
MetricLabels MethodLabels(const char* full_method) {
  std::string m = full_method != nullptr ? full_method : "";
  if (!m.empty() && m[0] == '/') m = m.substr(1);
  const size_t slash = m.rfind('/');
  if (slash == std::string::npos) return {{"grpc_service", ""}, {"grpc_method", m}};
  return {{"grpc_service", m.substr(0, slash)}, {"grpc_method", m.substr(slash + 1)}};
}

class MetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(MetricsRegistry* metrics, const char* method)
      : metrics_(metrics), labels_(MethodLabels(method)), start_(std::chrono::steady_clock::now()) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      metrics_
          ->GetHistogram("pstrain_grpc_server_handling_seconds", "Time from a gRPC call's start to its status",
                         LatencyBuckets(), labels_)
          ->Observe(secs);
      const int code = methods->GetSendStatus().error_code();
      MetricLabels with_code = labels_;
      with_code.emplace_back("grpc_code", code >= 0 && code < 17 ? kCodeNames[code] : std::to_string(code));
      metrics_->GetCounter("pstrain_grpc_server_handled_total", "gRPC calls finished, by status code", with_code)
          ->Increment();
    }
    methods->Proceed();
  }

 private:
  MetricsRegistry* const metrics_;
  const MetricLabels labels_;
  const std::chrono::steady_clock::time_point start_;
};

class MetricsInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(MetricsRegistry* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new MetricsInterceptor(metrics_, info->method());  // gRPC owns it
  }

 private:
  MetricsRegistry* const metrics_;
};

}  // namespace

void AddGrpcServerMetrics(grpc::ServerBuilder* builder, MetricsRegistry* metrics) {
  if (metrics == nullptr) return;
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(std::make_unique<MetricsInterceptorFactory>(metrics));
  builder->experimental().SetInterceptorCreators(std::move(creators));
}

}  // namespace pstrain
