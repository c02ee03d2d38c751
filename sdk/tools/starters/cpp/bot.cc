// A complete Kryt Arena bot in C++17 (grpc++). It serves the kryt.v1.Bot service and the
// standard health service on $KRYT_BOT_ADDRESS and plays its first legal action, taking
// only when nothing else is legal. The cpp runtime compiles every *.cc / *.cpp file of the
// submission against the pre-built kryt/v1/bot.grpc.pb.h bindings.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "kryt/v1/bot.grpc.pb.h"

namespace {

const char kName[] = "example-cpp";
const char kVersion[] = "1.0.0";

std::string Choose(const kryt::v1::View& view) {
  for (const std::string& action : view.legal_actions()) {
    // "take" and "swap take" both take: any other legal action first.
    if (action != "take" && action != "swap take") return action;
  }
  return view.legal_actions_size() > 0 ? view.legal_actions(0) : "take";
}

class BotService final : public kryt::v1::Bot::Service {
 public:
  grpc::Status Play(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<kryt::v1::BotMessage, kryt::v1::RefereeMessage>* stream) override {
    kryt::v1::RefereeMessage message;
    while (stream->Read(&message)) {
      kryt::v1::BotMessage reply;
      switch (message.body_case()) {
        case kryt::v1::RefereeMessage::kHandshake: {
          auto* hello = reply.mutable_handshake_reply();
          hello->set_protocol_version(1);
          hello->set_name(kName);
          hello->set_version(kVersion);
          hello->set_sdk("cpp");
          stream->Write(reply);
          break;
        }
        case kryt::v1::RefereeMessage::kDecisionRequest: {
          const auto& request = message.decision_request();
          auto* decision = reply.mutable_decision();
          decision->set_request_id(request.request_id());
          decision->set_text(Choose(request.view()));
          stream->Write(reply);
          break;
        }
        case kryt::v1::RefereeMessage::kShutdown:
          std::_Exit(0);  // the series is over; nothing is left to flush
        default:  // game_start and game_end need no reply
          break;
      }
    }
    return grpc::Status::OK;
  }
};

}  // namespace

int main(int argc, char** argv) {
  const char* env = std::getenv("KRYT_BOT_ADDRESS");
  std::string address = argc > 1 ? argv[1] : (env != nullptr ? env : "127.0.0.1:50051");
  grpc::EnableDefaultHealthCheckService(true);  // answers SERVING for "" once started
  BotService service;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials());
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) {
    std::cerr << "cannot serve on " << address << std::endl;
    return 1;
  }
  std::cerr << kName << " " << kVersion << " serving on " << address << std::endl;
  server->Wait();
  return 0;
}
