package main

// The protocol: the flipflop.v1.Bot service of proto/flipflop/v1/bot.proto, which the arena
// calls over gRPC. You should not need to change this file to change how the bot plays: that
// is strategy.go.
//
// The life of a connection: Handshake once, then for each match StartMatch, a Decide (or one
// answer on the match's DecideStream) for each of the bot's decisions with a HandEnded after
// every hand, then EndMatch. Several matches may be played at once on one connection, each
// call naming its match_id: the server keeps one __BOT_CLASS__ per match.
//
// What goes wrong is answered with a gRPC status code, as the Python SDK's server does:
//
//	INVALID_ARGUMENT     a request that makes no sense (card 52, no observation, a decision
//	                     for another seat, a DecideStream request for another match)
//	FAILED_PRECONDITION  another major protocol version; a match id with no StartMatch
//	ALREADY_EXISTS       a StartMatch for a match that is being played
//	INTERNAL             the bot's own code panicked (see recoverUnary in main.go)

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const (
	// botName is shown in standings (1 to 64 characters, no control characters).
	botName = "__BOT_NAME__"
	// botVersion is shown in standings next to the name; change it when the bot changes.
	botVersion = "0.1.0"
	// protocolVersion is the version of bot.proto this bot speaks. The arena refuses another
	// major version; 1.2 is the one with DecideStream.
	protocolVersion = "1.2"
)

// features are the optional capabilities announced in the handshake:
//
//   - "concurrent-matches": matches are kept apart by match_id, so the arena may play several
//     at once with this process;
//   - "decide-stream" (protocol 1.2): the arena asks for a match's decisions on one
//     DecideStream call rather than one Decide call each, which saves time per decision.
//     Remove it to be asked with Decide only: both are served.
var features = []string{"concurrent-matches", "decide-stream"}

// botServer answers the arena's calls.
type botServer struct {
	UnimplementedBotServer // answers UNIMPLEMENTED for a method added by a later protocol

	seatToken string // from FLIPFLOP_SEAT_TOKEN, sent back in every handshake

	mu      sync.Mutex
	matches map[string]*__BOT_CLASS__ // by match_id, from StartMatch until EndMatch
}

func newBotServer(seatToken string) *botServer {
	return &botServer{seatToken: seatToken, matches: map[string]*__BOT_CLASS__{}}
}

// Handshake agrees on the protocol, says who the bot is, and proves that this process is the
// one the arena started for the seat by sending back its seat token.
func (s *botServer) Handshake(ctx context.Context, req *HandshakeRequest) (*HandshakeResponse, error) {
	theirs := req.ProtocolVersion
	if major(theirs) != major(protocolVersion) {
		return nil, status.Errorf(codes.FailedPrecondition,
			"protocol version mismatch: the arena speaks %q, this bot speaks %s; the major versions must match",
			theirs, protocolVersion)
	}
	return &HandshakeResponse{
		ProtocolVersion: protocolVersion,
		Name:            botName,
		Version:         botVersion,
		Features:        features,
		Runtime:         fmt.Sprintf("%s / grpc-go %s", runtime.Version(), grpc.Version),
		SeatToken:       s.seatToken,
	}, nil
}

// major is the part of "MAJOR.MINOR" before the dot.
func major(version string) string {
	return strings.SplitN(version, ".", 2)[0]
}

// StartMatch makes a new __BOT_CLASS__ for the match.
func (s *botServer) StartMatch(ctx context.Context, req *StartMatchRequest) (*StartMatchResponse, error) {
	if req.MatchId == "" || req.Config == nil || int(req.Seat) >= len(req.Players) {
		return nil, status.Error(codes.InvalidArgument, "a StartMatch needs a match id, a config and a seat among the players")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.matches[req.MatchId]; dup {
		return nil, status.Errorf(codes.AlreadyExists, "match %q already started", req.MatchId)
	}
	s.matches[req.MatchId] = newBot(req)
	return &StartMatchResponse{}, nil
}

// bot is the __BOT_CLASS__ playing a match, or FAILED_PRECONDITION for a match not started.
func (s *botServer) bot(matchID string) (*__BOT_CLASS__, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.matches[matchID]
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "unknown match %q: no StartMatch for it, or it has ended", matchID)
	}
	return b, nil
}

// Decide answers one decision: startTurn in PHASE_START (one action), playTurn in
// PHASE_PLAY (the steps of the rest of the turn).
func (s *botServer) Decide(ctx context.Context, req *DecideRequest) (*DecideResponse, error) {
	b, err := s.bot(req.MatchId)
	if err != nil {
		return nil, err
	}
	obs := req.Observation
	if obs == nil {
		return nil, status.Error(codes.InvalidArgument, "the request has no observation")
	}
	if obs.Seat != b.match.Seat {
		return nil, status.Errorf(codes.InvalidArgument, "the observation is for seat %d, the bot plays seat %d", obs.Seat, b.match.Seat)
	}
	if err := checkCards(req); err != nil {
		return nil, err
	}
	switch obs.Phase {
	case Phase_PHASE_START:
		return &DecideResponse{Actions: []*Action{b.startTurn(obs, req.Legal)}}, nil
	case Phase_PHASE_PLAY:
		return &DecideResponse{Actions: b.playTurn(obs, req.Legal)}, nil
	default:
		return nil, status.Errorf(codes.InvalidArgument, "unknown phase %v", obs.Phase)
	}
}

// DecideStream answers a match's decisions on one stream (protocol 1.2): one answer per
// request, in order, each exactly as Decide would. The arena half-closes the stream when the
// match is over (Recv returns io.EOF) and we end it with status OK; a refused decision ends
// it with Decide's status, and the arena opens a new stream for the next decision.
func (s *botServer) DecideStream(stream Bot_DecideStreamServer) error {
	matchID := ""
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err // cancelled by the arena, or the connection is gone
		}
		if matchID == "" {
			matchID = req.MatchId
		} else if req.MatchId != matchID {
			return status.Errorf(codes.InvalidArgument, "this stream is for match %q, not %q", matchID, req.MatchId)
		}
		answer, err := s.Decide(stream.Context(), req)
		if err != nil {
			return err
		}
		if err := stream.Send(answer); err != nil {
			return err
		}
	}
}

// HandEnded tells the match's bot how a hand was settled.
func (s *botServer) HandEnded(ctx context.Context, req *HandEndedRequest) (*HandEndedResponse, error) {
	b, err := s.bot(req.MatchId)
	if err != nil {
		return nil, err
	}
	if req.Result != nil {
		b.handEnded(req.Result)
	}
	return &HandEndedResponse{}, nil
}

// EndMatch tells the match's bot the result, then forgets the match.
func (s *botServer) EndMatch(ctx context.Context, req *EndMatchRequest) (*EndMatchResponse, error) {
	b, err := s.bot(req.MatchId)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.matches, req.MatchId)
	s.mu.Unlock()
	if req.Result != nil {
		b.endMatch(req.Result)
	}
	return &EndMatchResponse{}, nil
}

// checkCards refuses a decision naming a card outside 0..51 (INVALID_ARGUMENT), so that the
// strategy never has to.
func checkCards(req *DecideRequest) error {
	obs := req.Observation
	lists := [][]uint32{obs.Hand, obs.DiscardPile, {obs.FlipCard}}
	for _, sp := range obs.Spreads {
		lists = append(lists, sp.Cards)
	}
	for _, a := range req.Legal {
		lists = append(lists, a.Cards)
	}
	if c, ok := drawnFromDiscard(obs); ok {
		lists = append(lists, []uint32{c})
	}
	for _, cards := range lists {
		for _, c := range cards {
			if c >= deckSize {
				return status.Errorf(codes.InvalidArgument, "card %d: cards are numbered 0..51", c)
			}
		}
	}
	return nil
}
