package main

// The strategy: what __BOT_NAME__ does on its turn. This is the file to change to make the bot
// stronger; server.go takes care of the protocol and calls the methods below.
//
// A turn is two decisions (docs/engine.md):
//
//   - PHASE_START: drop (R-DROP) or draw from the stock or the discard pile (R-DRAW);
//     startTurn answers it with one action.
//   - PHASE_PLAY: melds and lay-offs in any order (R-MELD), then one discard (R-DISCARD),
//     unless the hand is empty by then; playTurn answers it with the whole list of steps.
//
// The arena sends the legal actions with every decision: for PHASE_START all of them, for
// PHASE_PLAY the legal FIRST steps only (later steps are checked as they are applied). An
// illegal answer is never fatal: the arena plays a default for it and counts a strike, and
// three strikes forfeit the seat for the rest of the match.

import (
	"fmt"
	"log"
	"strings"
)

// dropAt is the highest hand total __BOT_NAME__ drops with. A dropper must have the strictly
// lowest total, or is caught and pays an extra stake (R-END-DROP); five or less is rarely
// beaten (the bundled Python greedy bot drops at 5 too).
const dropAt = 5

// __BOT_CLASS__ plays one match: server.go makes a new one at every StartMatch, so state kept
// here belongs to that match alone. The arena waits for each answer before its next call in a
// match, so these methods are called one at a time for a match (unless a decision runs past
// its deadline, when the arena moves on without it: keep decisions quick).
type __BOT_CLASS__ struct {
	match *StartMatchRequest // the seat, the players, the rules and the time budget
	hands int                // hands settled so far
}

// newBot is called by the server when a match starts.
func newBot(match *StartMatchRequest) *__BOT_CLASS__ {
	return &__BOT_CLASS__{match: match}
}

// startTurn answers a PHASE_START decision with exactly one action: drop, or draw.
func (b *__BOT_CLASS__) startTurn(obs *Observation, legal []*Action) *Action {
	if offered(legal, ActionKind_ACTION_KIND_DROP) && total(obs.Hand) <= dropAt {
		return &Action{Kind: ActionKind_ACTION_KIND_DROP} // R-DROP
	}
	// R-DRAW: the top of the discard pile (its last card) is public; take it when it helps.
	if pile := obs.DiscardPile; len(pile) > 0 && offered(legal, ActionKind_ACTION_KIND_DRAW_DISCARD) {
		if top := pile[len(pile)-1]; completesSpread(obs, top) {
			return &Action{Kind: ActionKind_ACTION_KIND_DRAW_DISCARD}
		}
	}
	if offered(legal, ActionKind_ACTION_KIND_DRAW_STOCK) {
		return &Action{Kind: ActionKind_ACTION_KIND_DRAW_STOCK}
	}
	return legal[0] // never happens: the stock is never empty when a turn starts
}

// completesSpread says whether taking card top from the discard pile lets us lay it down this
// turn: in a spread with cards of our hand, or as a lay-off on a spread on the table.
func completesSpread(obs *Observation, top uint32) bool {
	for _, m := range bestMelds(append(append([]uint32(nil), obs.Hand...), top), top, true) {
		if contains(m, top) {
			return true
		}
	}
	for _, sp := range obs.Spreads {
		if fits(sp.Cards, sp.Kind == SpreadKind_SPREAD_KIND_RUN, top) {
			return true
		}
	}
	return false
}

// playTurn answers a PHASE_PLAY decision: the melds and lay-offs, in order, then a discard
// unless the hand is empty by then (going out, R-END-OUT).
//
// Every step is checked against R-NO-STRAND before it is added: after a meld or a lay-off the
// hand must be empty or still hold a card we may discard, that is one other than the card
// just taken from the discard pile (R-DRAW forbids discarding that one this turn).
func (b *__BOT_CLASS__) playTurn(obs *Observation, legal []*Action) []*Action {
	hand := append([]uint32(nil), obs.Hand...)
	keep, hasKeep := drawnFromDiscard(obs)
	mayDiscard := func(c uint32) bool { return !hasKeep || c != keep }
	// R-NO-STRAND: the hand left after a step is empty, or holds a card we may discard.
	notStranded := func(rest []uint32) bool {
		for _, c := range rest {
			if mayDiscard(c) {
				return true
			}
		}
		return len(rest) == 0
	}

	// The table as our steps change it. A lay-off names its spread by index (Action.target):
	// the spreads already on the table are 0..len(obs.Spreads)-1, in the order the observation
	// lists them, and each spread we meld this turn takes the next index.
	table := make([]tableSpread, 0, len(obs.Spreads)+2)
	for _, sp := range obs.Spreads {
		table = append(table, tableSpread{append([]uint32(nil), sp.Cards...), sp.Kind == SpreadKind_SPREAD_KIND_RUN})
	}
	var steps []*Action

	// 1. Meld the spreads that leave the lowest total (R-MELD, R-RUN, R-SET). The one holding
	// the card just taken from the discard pile goes first: after it, every card left may be
	// discarded, so no later step can strand us.
	melds := bestMelds(hand, keep, hasKeep)
	for i, m := range melds {
		if hasKeep && contains(m, keep) {
			melds[0], melds[i] = melds[i], melds[0]
		}
	}
	for _, m := range melds {
		rest := without(hand, m...)
		if !notStranded(rest) {
			continue
		}
		steps = append(steps, &Action{Kind: ActionKind_ACTION_KIND_MELD, Cards: sorted(m)})
		table = append(table, tableSpread{append([]uint32(nil), m...), isRun(m)})
		hand = rest
	}

	// 2. Lay off every card that fits a spread on the table, anyone's (R-LAYOFF), until none
	// does: a card laid off on a run may make room for the next one. The card just taken goes
	// first (it cannot be discarded anyway), then the highest.
	for laid := true; laid && len(hand) > 0; {
		laid = false
		for _, c := range layoffOrder(hand, keep, hasKeep) {
			t := -1
			for i := range table {
				if fits(table[i].cards, table[i].run, c) {
					t = i
					break
				}
			}
			rest := without(hand, c)
			if t < 0 || !notStranded(rest) {
				continue
			}
			steps = append(steps, &Action{Kind: ActionKind_ACTION_KIND_LAY_OFF, Cards: []uint32{c}, Target: int32(t)})
			table[t].cards = append(table[t].cards, c)
			hand = rest
			laid = true
			break
		}
	}

	// 3. Discard the highest card we may (R-DISCARD), unless we are out: an empty hand ends
	// the play at once, and any step after that would be refused.
	if len(hand) > 0 {
		best, found := uint32(0), false
		for _, c := range hand {
			if mayDiscard(c) && (!found || value(c) > value(best) || (value(c) == value(best) && c > best)) {
				best, found = c, true
			}
		}
		steps = append(steps, &Action{Kind: ActionKind_ACTION_KIND_DISCARD, Cards: []uint32{best}})
	}

	// A safety net while you change this file: if the first step is not one the arena offered,
	// something above is wrong; play the highest legal discard instead of a certain strike.
	if len(steps) == 0 || !offeredStep(legal, steps[0]) {
		log.Printf("match %s: planned %v, which is not legal; discarding instead", b.match.MatchId, describeAll(steps))
		return []*Action{highestDiscard(legal)}
	}
	return steps
}

// handEnded is told how each hand was settled, with every hand that was shown. A stronger
// bot would learn from it (who drops with what, who holds what); this one only counts.
func (b *__BOT_CLASS__) handEnded(result *HandResult) {
	b.hands++
}

// endMatch is told the match's result: result.Placements[seat] is our place, 1 is best.
func (b *__BOT_CLASS__) endMatch(result *MatchResult) {
	seat := b.match.Seat
	if int(seat) < len(result.Placements) {
		log.Printf("match %s over after %d hands: place %d", b.match.MatchId, b.hands, result.Placements[seat])
	}
}

// ---------------------------------------------------------------------------- helpers

// tableSpread is a spread on the table as a turn's steps change it.
type tableSpread struct {
	cards []uint32
	run   bool // a run (R-RUN); otherwise a set (R-SET)
}

// drawnFromDiscard is the card taken from the discard pile this turn, if any. The field is a
// proto3 `optional`: the card may be 0 (the ace of clubs), so only its presence tells "a card"
// from "none". In the generated code that presence is the HasDrawnFromDiscard field being set.
func drawnFromDiscard(obs *Observation) (uint32, bool) {
	if obs.GetHasDrawnFromDiscard() == nil {
		return 0, false
	}
	return obs.GetDrawnFromDiscard(), true
}

// bestMelds chooses disjoint spreads to lay down from hand, leaving the lowest total. When
// hasKeep, keep is the card just taken from the discard pile, and the melds may not leave it
// alone in the hand (R-NO-STRAND). A hand after a draw has at most a handful of cards, so
// trying every combination is quick.
func bestMelds(hand []uint32, keep uint32, hasKeep bool) [][]uint32 {
	candidates := spreadsIn(hand)
	var best, chosen [][]uint32
	bestLeft := total(hand)
	var search func(from int, left []uint32)
	search = func(from int, left []uint32) {
		stranded := hasKeep && len(left) == 1 && left[0] == keep
		if t := total(left); t < bestLeft && !stranded {
			best, bestLeft = append([][]uint32(nil), chosen...), t
		}
		for i := from; i < len(candidates); i++ {
			m := candidates[i]
			if len(without(left, m...)) != len(left)-len(m) {
				continue // a card of m is no longer in hand: it went into another meld
			}
			chosen = append(chosen, m)
			search(i+1, without(left, m...))
			chosen = chosen[:len(chosen)-1]
		}
	}
	search(0, hand)
	return best
}

// layoffOrder is the order in which to try laying off hand's cards: the card just taken from
// the discard pile first, then the highest values.
func layoffOrder(hand []uint32, keep uint32, hasKeep bool) []uint32 {
	order := append([]uint32(nil), hand...)
	rank := func(c uint32) int {
		if hasKeep && c == keep {
			return 100
		}
		return value(c)
	}
	for i := 1; i < len(order); i++ { // insertion sort: a few cards
		for j := i; j > 0 && rank(order[j]) > rank(order[j-1]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return order
}

// offered says whether the legal actions include one of this kind.
func offered(legal []*Action, kind ActionKind) bool {
	for _, a := range legal {
		if a.Kind == kind {
			return true
		}
	}
	return false
}

// offeredStep says whether step is among the legal first steps (a meld's cards in any order).
func offeredStep(legal []*Action, step *Action) bool {
	for _, a := range legal {
		if a.Kind != step.Kind || len(a.Cards) != len(step.Cards) {
			continue
		}
		if a.Kind == ActionKind_ACTION_KIND_LAY_OFF && a.Target != step.Target {
			continue
		}
		if len(without(a.Cards, step.Cards...)) == 0 {
			return true
		}
	}
	return false
}

// highestDiscard is the legal discard of the highest-value card (the arena's own default).
func highestDiscard(legal []*Action) *Action {
	var best *Action
	for _, a := range legal {
		if a.Kind != ActionKind_ACTION_KIND_DISCARD || len(a.Cards) != 1 {
			continue
		}
		if best == nil || value(a.Cards[0]) > value(best.Cards[0]) {
			best = a
		}
	}
	if best == nil && len(legal) > 0 {
		best = legal[0]
	}
	return best
}

// describeAll writes a plan for logs, one action after another.
func describeAll(steps []*Action) []string {
	out := make([]string, len(steps))
	for i, a := range steps {
		out[i] = describe(a)
	}
	return out
}

// describe writes an action for logs, e.g. "MELD 4c 5c 6c" or "LAY_OFF 7c on spread 2".
func describe(a *Action) string {
	text := strings.TrimPrefix(a.Kind.String(), "ACTION_KIND_")
	for _, c := range a.Cards {
		text += " " + cardName(c)
	}
	if a.Kind == ActionKind_ACTION_KIND_LAY_OFF {
		text += fmt.Sprintf(" on spread %d", a.Target)
	}
	return text
}
