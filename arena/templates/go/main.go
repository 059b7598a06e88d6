// Command bot is __BOT_NAME__, a bot for the card game Game, Flip, Flop, served over gRPC to
// the Flip Flop Arena.
//
// The bot is the gRPC server and the arena is the client. Files:
//
//	main.go      start-up: where to listen, the seat token, the health check, shutting down
//	server.go    the protocol: the flipflop.v1.Bot service (handshake, matches, decisions)
//	strategy.go  how the bot plays: start here to make it stronger
//	cards.go     card numbers, values, runs and sets (the rules the strategy needs)
//	bot.pb.go    generated from the arena's proto/flipflop/v1/bot.proto: do not edit
//
// Run it (see README.md to build it):
//
//	./bot --listen unix:/tmp/__BOT_NAME__.sock    # or --listen 127.0.0.1:50051 (TCP)
//
// The endpoint is the --listen argument, else the environment variable FLIPFLOP_LISTEN, else
// unix:/tmp/flipflop-bot.sock. The arena starts the bot with --listen and FLIPFLOP_LISTEN set.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

const (
	defaultEndpoint = "unix:/tmp/flipflop-bot.sock"
	listenEnv       = "FLIPFLOP_LISTEN"
	seatTokenEnv    = "FLIPFLOP_SEAT_TOKEN"
	// maxMessageBytes is the largest request accepted: the arena's requests are at most
	// 4 MiB (a decision late in a long hand is a few KB). Answers are far smaller: the arena
	// refuses a decision's answer over 16 KiB.
	maxMessageBytes = 4 << 20
	// grace is how long calls in flight may take to finish when the bot is told to stop.
	grace = 2 * time.Second
)

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds) // logs go to stderr; the arena keeps them
	listen := flag.String("listen", "", "where to listen: unix:/abs/path.sock or host:port (default: $"+listenEnv+", else "+defaultEndpoint+")")
	flag.Parse()
	endpoint := *listen
	if endpoint == "" {
		endpoint = os.Getenv(listenEnv)
	}
	if endpoint == "" {
		endpoint = defaultEndpoint
	}

	// The seat token proves to the arena that this process is the one it started for the
	// seat. Read it once and remove it from the environment, so that no child process, log or
	// debug note ever shows it; it is sent in the handshake and nowhere else.
	seatToken := os.Getenv(seatTokenEnv)
	os.Unsetenv(seatTokenEnv)

	lis, where, err := listenOn(endpoint)
	if err != nil {
		log.Fatalf("cannot listen on %s: %v", endpoint, err)
	}
	server := grpc.NewServer(
		grpc.MaxRecvMsgSize(maxMessageBytes),
		grpc.UnaryInterceptor(recoverUnary),
		grpc.StreamInterceptor(recoverStream),
	)
	RegisterBotServer(server, newBotServer(seatToken))

	// The standard health check (grpc.health.v1.Health): the arena waits for SERVING before
	// the handshake, asking for the service "flipflop.v1.Bot"; "" means the whole server. Any
	// other name is answered NOT_FOUND.
	healthServer := health.NewServer()
	healthServer.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthServer.SetServingStatus("flipflop.v1.Bot", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(server, healthServer)

	// The arena stops a bot with SIGTERM (then SIGKILL if it lingers); Ctrl-C sends SIGINT.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-signals
		log.Printf("received %v, shutting down", sig)
		healthServer.Shutdown() // NOT_SERVING from now on
		done := make(chan struct{})
		go func() { server.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-time.After(grace):
			server.Stop()
		}
	}()

	fmt.Printf("serving %s on %s\n", botName, where)
	if err := server.Serve(lis); err != nil {
		log.Fatalf("serving: %v", err)
	}
	// Serve has returned after a stop; closing the listener removed the socket file.
}

// listenOn opens the endpoint: "unix:/abs/path.sock" (also "unix:///abs/path.sock") or a TCP
// "host:port", where port 0 picks a free port. It returns the listener and the endpoint as
// bound (with the port chosen, for TCP).
func listenOn(endpoint string) (net.Listener, string, error) {
	if !strings.HasPrefix(endpoint, "unix:") {
		lis, err := net.Listen("tcp", endpoint)
		if err != nil {
			return nil, "", err
		}
		return lis, lis.Addr().String(), nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(endpoint, "unix:"), "//")
	if !filepath.IsAbs(path) {
		return nil, "", fmt.Errorf("the socket path must be absolute")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, "", err
	}
	if err := removeStaleSocket(path); err != nil {
		return nil, "", err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return nil, "", err
	}
	return lis, "unix:" + path, nil
}

// removeStaleSocket removes a socket file left by a bot that is gone, and refuses to take over
// one that another server still listens on, or a file that is not a socket.
func removeStaleSocket(path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket", path)
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return fmt.Errorf("another server is listening on %s", path)
	}
	return os.Remove(path)
}

// recoverUnary turns a panic in a call into an INTERNAL error for that call. Without it one
// bug in the strategy (an index out of range, say) would kill the whole process, and a dead
// bot forfeits its seat; with it the arena counts one fault and plays a default move.
func recoverUnary(ctx context.Context, req interface{}, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp interface{}, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Printf("%s panicked: %v\n%s", info.FullMethod, r, debug.Stack())
			err = status.Errorf(codes.Internal, "the bot panicked: %v", r)
		}
	}()
	return handler(ctx, req)
}

// recoverStream is recoverUnary for DecideStream.
func recoverStream(srv interface{}, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Printf("%s panicked: %v\n%s", info.FullMethod, r, debug.Stack())
			err = status.Errorf(codes.Internal, "the bot panicked: %v", r)
		}
	}()
	return handler(srv, ss)
}
