package main

// Unit tests of the protocol's answers and status codes: `make test`. The arena's
// conformance check (`arena check .`) tests the same over a real connection.

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// code is the gRPC status code of err (OK for nil).
func code(err error) codes.Code { return status.Code(err) }

func startedServer(t *testing.T) *botServer {
	t.Helper()
	s := newBotServer("s3cret")
	req := &StartMatchRequest{MatchId: "m1", Seat: 1, Players: []string{"a", "b", "c"}, Config: &MatchConfig{Seats: 3}}
	if _, err := s.StartMatch(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHandshakeSendsTheSeatTokenBack(t *testing.T) {
	got, err := newBotServer("s3cret").Handshake(context.Background(), &HandshakeRequest{ProtocolVersion: "1.2"})
	if err != nil || got.SeatToken != "s3cret" || got.ProtocolVersion != protocolVersion || got.Name != botName {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestHandshakeRefusesAnotherMajorVersion(t *testing.T) {
	_, err := newBotServer("").Handshake(context.Background(), &HandshakeRequest{ProtocolVersion: "2.0"})
	if code(err) != codes.FailedPrecondition {
		t.Fatalf("want FAILED_PRECONDITION, got %v", err)
	}
}

func TestStartMatchTwiceIsRefused(t *testing.T) {
	s := startedServer(t)
	_, err := s.StartMatch(context.Background(), &StartMatchRequest{MatchId: "m1", Seat: 0, Players: []string{"a"}, Config: &MatchConfig{}})
	if code(err) != codes.AlreadyExists {
		t.Fatalf("want ALREADY_EXISTS, got %v", err)
	}
}

func TestDecideAnswersOneDrawToStart(t *testing.T) {
	obs := &Observation{Seat: 1, Phase: Phase_PHASE_START, Hand: []uint32{0, 22, 35, 48, 51}}
	legal := []*Action{{Kind: ActionKind_ACTION_KIND_DROP}, {Kind: ActionKind_ACTION_KIND_DRAW_STOCK}}
	got, err := startedServer(t).Decide(context.Background(), &DecideRequest{MatchId: "m1", Observation: obs, Legal: legal})
	if err != nil || len(got.Actions) != 1 || got.Actions[0].Kind != ActionKind_ACTION_KIND_DRAW_STOCK {
		t.Fatalf("got %v, %v", got, err)
	}
}

func TestDecideRefusals(t *testing.T) {
	s := startedServer(t)
	for name, tc := range map[string]struct {
		req  *DecideRequest
		want codes.Code
	}{
		"unknown match":  {&DecideRequest{MatchId: "m2", Observation: &Observation{Seat: 1, Phase: Phase_PHASE_START}}, codes.FailedPrecondition},
		"no observation": {&DecideRequest{MatchId: "m1"}, codes.InvalidArgument},
		"another seat":   {&DecideRequest{MatchId: "m1", Observation: &Observation{Seat: 0, Phase: Phase_PHASE_START}}, codes.InvalidArgument},
		"card 52":        {&DecideRequest{MatchId: "m1", Observation: &Observation{Seat: 1, Phase: Phase_PHASE_START, Hand: []uint32{52}}}, codes.InvalidArgument},
		"no phase":       {&DecideRequest{MatchId: "m1", Observation: &Observation{Seat: 1}}, codes.InvalidArgument},
	} {
		if _, err := s.Decide(context.Background(), tc.req); code(err) != tc.want {
			t.Errorf("%s: want %v, got %v", name, tc.want, err)
		}
	}
}

func TestEndMatchForgetsTheMatch(t *testing.T) {
	s := startedServer(t)
	if _, err := s.EndMatch(context.Background(), &EndMatchRequest{MatchId: "m1", Result: &MatchResult{Placements: []uint32{2, 1, 3}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.HandEnded(context.Background(), &HandEndedRequest{MatchId: "m1"}); code(err) != codes.FailedPrecondition {
		t.Fatalf("want FAILED_PRECONDITION after EndMatch, got %v", err)
	}
}
