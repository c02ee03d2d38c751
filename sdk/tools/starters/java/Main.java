// A complete Kryt Arena bot in Java 17 (grpc-java with netty). It serves the kryt.v1.Bot
// service and the standard health service and plays its first legal action, taking only
// when nothing else is legal. The java runtime starts it with the address to serve on as
// args[0]: a loopback "host:port" (the runtime bridges the referee's Unix socket to it,
// because Debian's netty has no native Unix-socket transport).
import io.grpc.Server;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthGrpc;
import java.net.InetSocketAddress;
import kryt.v1.BotGrpc;
import kryt.v1.BotOuterClass.BotMessage;
import kryt.v1.BotOuterClass.Decision;
import kryt.v1.BotOuterClass.HandshakeReply;
import kryt.v1.BotOuterClass.RefereeMessage;
import kryt.v1.BotOuterClass.View;

public final class Main {
  static final String NAME = "example-java";
  static final String VERSION = "1.0.0";

  static String choose(View view) {
    for (String action : view.getLegalActionsList()) {
      // "take" and "swap take" both take: any other legal action first.
      if (!action.equals("take") && !action.equals("swap take")) {
        return action;
      }
    }
    return "take";
  }

  static final class Bot extends BotGrpc.BotImplBase {
    @Override
    public StreamObserver<RefereeMessage> play(StreamObserver<BotMessage> out) {
      return new StreamObserver<RefereeMessage>() {
        @Override
        public void onNext(RefereeMessage message) {
          switch (message.getBodyCase()) {
            case HANDSHAKE:
              HandshakeReply hello = HandshakeReply.newBuilder().setProtocolVersion(1)
                  .setName(NAME).setVersion(VERSION).setSdk("java").build();
              out.onNext(BotMessage.newBuilder().setHandshakeReply(hello).build());
              break;
            case DECISION_REQUEST:
              var request = message.getDecisionRequest();
              Decision decision = Decision.newBuilder().setRequestId(request.getRequestId())
                  .setText(choose(request.getView())).build();
              out.onNext(BotMessage.newBuilder().setDecision(decision).build());
              break;
            case SHUTDOWN:
              Runtime.getRuntime().halt(0); // the series is over; nothing is left to flush
              break;
            default: // game_start and game_end need no reply
              break;
          }
        }

        @Override
        public void onError(Throwable error) {}

        @Override
        public void onCompleted() {
          out.onCompleted();
        }
      };
    }
  }

  static final class Health extends HealthGrpc.HealthImplBase {
    @Override
    public void check(HealthCheckRequest request, StreamObserver<HealthCheckResponse> out) {
      out.onNext(HealthCheckResponse.newBuilder()
          .setStatus(HealthCheckResponse.ServingStatus.SERVING).build());
      out.onCompleted();
    }
  }

  public static void main(String[] args) throws Exception {
    String address = args.length > 0 ? args[0] : "127.0.0.1:50051";
    int colon = address.lastIndexOf(':');
    if (address.startsWith("unix:") || colon < 0) {
      throw new IllegalArgumentException("expected host:port, got " + address);
    }
    InetSocketAddress where = new InetSocketAddress(
        address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)));
    Server server = NettyServerBuilder.forAddress(where)
        .addService(new Bot()).addService(new Health()).build().start();
    System.err.println(NAME + " " + VERSION + " serving on " + address);
    server.awaitTermination();
  }
}
