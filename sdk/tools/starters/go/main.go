// A complete Kryt Arena bot in Go (grpc-go). It serves the kryt.v1.Bot service and the
// standard health service on $KRYT_BOT_ADDRESS and plays its first legal action, taking only
// when nothing else is legal. The go runtime builds the submission's package main in GOPATH
// mode, with the kryt/v1 bindings and grpc-go already on its GOPATH.
package main

import (
	"io"
	"log"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	pb "kryt/v1"
)

const (
	name    = "example-go"
	version = "1.0.0"
)

type bot struct {
	pb.UnimplementedBotServer
}

func choose(view *pb.View) string {
	for _, action := range view.GetLegalActions() {
		// "take" and "swap take" both take: any other legal action first.
		if action != "take" && action != "swap take" {
			return action
		}
	}
	return "take"
}

func (bot) Play(stream pb.Bot_PlayServer) error {
	for {
		message, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch body := message.Body.(type) {
		case *pb.RefereeMessage_Handshake:
			reply := &pb.HandshakeReply{ProtocolVersion: 1, Name: name, Version: version, Sdk: "go"}
			err = stream.Send(&pb.BotMessage{Body: &pb.BotMessage_HandshakeReply{HandshakeReply: reply}})
		case *pb.RefereeMessage_DecisionRequest:
			request := body.DecisionRequest
			decision := &pb.Decision{
				RequestId: request.GetRequestId(),
				Action:    &pb.Decision_Text{Text: choose(request.GetView())},
			}
			err = stream.Send(&pb.BotMessage{Body: &pb.BotMessage_Decision{Decision: decision}})
		case *pb.RefereeMessage_Shutdown:
			os.Exit(0) // the series is over; nothing is left to flush
		}
		if err != nil {
			return err
		}
	}
}

func main() {
	address := os.Getenv("KRYT_BOT_ADDRESS")
	if len(os.Args) > 1 {
		address = os.Args[1]
	}
	if address == "" {
		address = "127.0.0.1:50051"
	}
	network, where := "tcp", address
	if strings.HasPrefix(address, "unix:") {
		network, where = "unix", strings.TrimPrefix(strings.TrimPrefix(address, "unix:"), "//")
	}
	listener, err := net.Listen(network, where)
	if err != nil {
		log.Fatalf("cannot serve on %s: %v", address, err)
	}
	server := grpc.NewServer()
	pb.RegisterBotServer(server, bot{})
	status := health.NewServer() // "" is SERVING from the start
	status.SetServingStatus("kryt.v1.Bot", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(server, status)
	log.Printf("%s %s serving on %s", name, version, address)
	if err := server.Serve(listener); err != nil {
		log.Fatal(err)
	}
}
