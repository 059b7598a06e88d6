package main

// Unit tests of the rules and of a turn's plan: `make test`. Each names the rule it shows.

import (
	"reflect"
	"testing"
)

// c is a card from its rank (1 = ace .. 13 = king) and suit letter: c(4, 'c') is the 4 of clubs.
func c(rank uint32, suit byte) uint32 {
	return cardOf(map[byte]uint32{'c': 0, 'd': 1, 'h': 2, 's': 3}[suit], rank)
}

// play is a PHASE_PLAY observation: our hand, the spreads on the table, and the card taken
// from the discard pile this turn if drawn is given.
func play(hand []uint32, table []*Spread, drawn ...uint32) *Observation {
	obs := &Observation{Phase: Phase_PHASE_PLAY, Hand: sorted(hand), Spreads: table}
	if len(drawn) == 1 {
		obs.HasDrawnFromDiscard = &Observation_DrawnFromDiscard{DrawnFromDiscard: drawn[0]}
	}
	return obs
}

// planned runs playTurn, with every card of the hand offered as a first-step discard.
func planned(t *testing.T, obs *Observation) []string {
	t.Helper()
	var legal []*Action
	for _, x := range obs.Hand {
		legal = append(legal, &Action{Kind: ActionKind_ACTION_KIND_DISCARD, Cards: []uint32{x}})
	}
	for _, m := range spreadsIn(obs.Hand) {
		legal = append(legal, &Action{Kind: ActionKind_ACTION_KIND_MELD, Cards: sorted(m)})
	}
	for i, sp := range obs.Spreads {
		for _, x := range obs.Hand {
			if fits(sp.Cards, sp.Kind == SpreadKind_SPREAD_KIND_RUN, x) {
				legal = append(legal, &Action{Kind: ActionKind_ACTION_KIND_LAY_OFF, Cards: []uint32{x}, Target: int32(i)})
			}
		}
	}
	bot := newBot(&StartMatchRequest{MatchId: "test"})
	var out []string
	for _, a := range bot.playTurn(obs, legal) {
		out = append(out, describe(a))
	}
	return out
}

func TestCardNumbers(t *testing.T) {
	// bot.proto: card = suit*13 + rank-1; 0 is the ace of clubs, 51 the king of spades.
	if c(1, 'c') != 0 || c(13, 's') != 51 || cardName(0) != "Ac" || cardName(22) != "10d" {
		t.Fatal("card numbering differs from bot.proto")
	}
}

func TestValues(t *testing.T) { // R-VALUE
	if got := total([]uint32{c(1, 'c'), c(10, 'd'), c(11, 'h'), c(13, 's'), c(7, 'c')}); got != 38 {
		t.Fatalf("A+10+J+K+7 = %d, want 38", got)
	}
}

func TestRunsAreAceLowAndDoNotWrap(t *testing.T) { // R-RUN
	if got := spreadsIn([]uint32{c(12, 'h'), c(13, 'h'), c(1, 'h')}); len(got) != 0 {
		t.Fatalf("Q-K-A is no run, got %v", got)
	}
	if got := spreadsIn([]uint32{c(1, 'h'), c(2, 'h'), c(3, 'h')}); len(got) != 1 {
		t.Fatalf("A-2-3 is a run, got %v", got)
	}
}

func TestSetOfFourAlsoGivesItsSetsOfThree(t *testing.T) { // R-SET
	if got := spreadsIn([]uint32{c(9, 'c'), c(9, 'd'), c(9, 'h'), c(9, 's')}); len(got) != 5 {
		t.Fatalf("a set of four and its four sets of three, got %d spreads", len(got))
	}
}

func TestMeldsThenDiscardsTheHighest(t *testing.T) { // R-MELD, R-DISCARD
	got := planned(t, play([]uint32{c(4, 'c'), c(5, 'c'), c(6, 'c'), c(2, 'd'), c(12, 's'), c(3, 'h')}, nil))
	want := []string{"MELD 4c 5c 6c", "DISCARD Qs"}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("want %v, got %v", want, got)
	}
}

func TestNeverStrandsWithTheCardTakenFromTheDiscardPile(t *testing.T) { // R-NO-STRAND
	// The example of docs/rules.md: D holds 4c 5c 6c and takes 9h from the discard pile.
	// Melding the clubs would leave only 9h, which may not be discarded this turn.
	got := planned(t, play([]uint32{c(4, 'c'), c(5, 'c'), c(6, 'c'), c(9, 'h')}, nil, c(9, 'h')))
	want := []string{"DISCARD 6c"}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("want %v, got %v", want, got)
	}
}

func TestTheAceOfClubsTakenFromThePileIsNotDiscarded(t *testing.T) { // R-DRAW; card 0
	// Card 0 is a real card: presence, not the value, says a card was taken.
	got := planned(t, play([]uint32{c(1, 'c'), c(2, 'd'), c(3, 'h')}, nil, c(1, 'c')))
	want := []string{"DISCARD 3h"}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("want %v, got %v", want, got)
	}
}

func TestLaysOffOnTheSpreadsItFits(t *testing.T) { // R-LAYOFF, Action.target
	table := []*Spread{
		{Kind: SpreadKind_SPREAD_KIND_SET, Cards: []uint32{c(8, 'c'), c(8, 'd'), c(8, 'h')}},   // spread 0
		{Kind: SpreadKind_SPREAD_KIND_RUN, Cards: []uint32{c(9, 'd'), c(10, 'd'), c(11, 'd')}}, // spread 1
	}
	hand := []uint32{c(2, 'h'), c(3, 'h'), c(4, 'h'), c(5, 'h'), c(8, 's'), c(12, 'd'), c(13, 'c')}
	got := planned(t, play(hand, table))
	// The run 2h-5h becomes spread 2; Qd extends the diamonds, 8s completes the eights, and
	// discarding the last card goes out (R-END-OUT).
	want := []string{"MELD 2h 3h 4h 5h", "LAY_OFF Qd on spread 1", "LAY_OFF 8s on spread 0", "DISCARD Kc"}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("want %v, got %v", want, got)
	}
}

func TestGoesOutWithoutADiscard(t *testing.T) { // R-END-OUT
	got := planned(t, play([]uint32{c(7, 'c'), c(7, 'd'), c(7, 's')}, nil))
	want := []string{"MELD 7c 7d 7s"}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("want %v, got %v", want, got)
	}
}

func TestTakesTheDiscardThatCompletesASpread(t *testing.T) { // R-DRAW
	obs := &Observation{Phase: Phase_PHASE_START, Hand: []uint32{c(4, 'c'), c(5, 'c'), c(9, 'h'), c(12, 's'), c(13, 'd')}}
	legal := []*Action{{Kind: ActionKind_ACTION_KIND_DROP}, {Kind: ActionKind_ACTION_KIND_DRAW_STOCK}, {Kind: ActionKind_ACTION_KIND_DRAW_DISCARD}}
	bot := newBot(&StartMatchRequest{MatchId: "test"})
	for top, want := range map[uint32]ActionKind{
		c(6, 'c'): ActionKind_ACTION_KIND_DRAW_DISCARD, // 4c 5c 6c
		c(6, 'd'): ActionKind_ACTION_KIND_DRAW_STOCK,
	} {
		obs.DiscardPile = []uint32{top}
		if got := bot.startTurn(obs, legal).Kind; got != want {
			t.Errorf("top %s: want %v, got %v", cardName(top), want, got)
		}
	}
}

func TestDropsWithALowTotal(t *testing.T) { // R-DROP
	obs := &Observation{Phase: Phase_PHASE_START, Hand: []uint32{c(1, 'c'), c(1, 'd'), c(3, 'h')}}
	legal := []*Action{{Kind: ActionKind_ACTION_KIND_DROP}, {Kind: ActionKind_ACTION_KIND_DRAW_STOCK}}
	if got := newBot(&StartMatchRequest{}).startTurn(obs, legal).Kind; got != ActionKind_ACTION_KIND_DROP {
		t.Fatalf("a total of 5: want a drop, got %v", got)
	}
}
