package main

// Cards, values and spreads: the parts of the rules (RULES.md) a bot needs to plan a turn.
//
// A card travels as a number 0..51 (proto/flipflop/v1/bot.proto):
//
//	card = suit*13 + (rank - 1)
//
// with suits 0 = clubs, 1 = diamonds, 2 = hearts, 3 = spades and ranks 1 = ace (always low),
// 2..10, 11 = jack, 12 = queen, 13 = king. So 0 is the ace of clubs, 12 the king of clubs and
// 51 the king of spades. Because 0 is a real card, a field that may hold "no card" is sent
// with proto3 presence: see drawnFromDiscard in strategy.go.

import (
	"fmt"
	"sort"
)

// deckSize is the number of cards in the pack (R-DECK).
const deckSize = 52

var suitNames = [4]string{"c", "d", "h", "s"}
var rankNames = [14]string{"", "A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"}

// suitOf returns a card's suit, 0..3.
func suitOf(c uint32) uint32 { return c / 13 }

// rankOf returns a card's rank, 1 (ace) .. 13 (king).
func rankOf(c uint32) uint32 { return c%13 + 1 }

// cardOf is the card of a suit and a rank.
func cardOf(suit, rank uint32) uint32 { return suit*13 + rank - 1 }

// value is what a card counts in a hand's total: ace 1, 2-10 face value, J/Q/K 10 (R-VALUE).
func value(c uint32) int {
	if r := rankOf(c); r < 10 {
		return int(r)
	}
	return 10
}

// total is the sum of the cards' values (R-VALUE): the lower, the better.
func total(cards []uint32) int {
	sum := 0
	for _, c := range cards {
		sum += value(c)
	}
	return sum
}

// cardName writes a card for people and logs: "Ac" is the ace of clubs, "10h" the ten of hearts.
func cardName(c uint32) string {
	if c >= deckSize {
		return fmt.Sprintf("card%d", c)
	}
	return rankNames[rankOf(c)] + suitNames[suitOf(c)]
}

// without returns cards minus the ones in remove (a new slice; cards is left as it is).
func without(cards []uint32, remove ...uint32) []uint32 {
	out := make([]uint32, 0, len(cards))
	for _, c := range cards {
		keep := true
		for _, r := range remove {
			if c == r {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// contains says whether card c is among cards.
func contains(cards []uint32, c uint32) bool {
	for _, x := range cards {
		if x == c {
			return true
		}
	}
	return false
}

// spreadsIn lists every spread that can be laid down from hand: every run of three or more
// consecutive cards of one suit, aces low, no wrapping past the king (R-RUN), and every set of
// three or four cards of one rank (R-SET). A set of four also yields its four sets of three,
// and a run of five its shorter runs: the planner chooses which to lay down.
func spreadsIn(hand []uint32) [][]uint32 {
	var have [4][14]bool // have[suit][rank]
	for _, c := range hand {
		have[suitOf(c)][rankOf(c)] = true
	}
	var out [][]uint32
	// Runs: every stretch lo..hi of at least three ranks held in one suit.
	for s := uint32(0); s < 4; s++ {
		for lo := uint32(1); lo <= 11; lo++ {
			for hi := lo; hi <= 13 && have[s][hi]; hi++ {
				if hi-lo+1 >= 3 {
					run := make([]uint32, 0, hi-lo+1)
					for r := lo; r <= hi; r++ {
						run = append(run, cardOf(s, r))
					}
					out = append(out, run)
				}
			}
		}
	}
	// Sets: the cards of each rank held at least three times.
	for r := uint32(1); r <= 13; r++ {
		var same []uint32
		for s := uint32(0); s < 4; s++ {
			if have[s][r] {
				same = append(same, cardOf(s, r))
			}
		}
		if len(same) == 4 {
			out = append(out, same)
			for skip := range same {
				out = append(out, without(same, same[skip]))
			}
		} else if len(same) == 3 {
			out = append(out, same)
		}
	}
	return out
}

// isRun says whether a spread's cards are a run rather than a set. A spread on the table says
// so itself (Spread.kind); this is for the spreads the planner makes.
func isRun(cards []uint32) bool {
	return len(cards) >= 2 && rankOf(cards[0]) != rankOf(cards[1])
}

// fits says whether card c may be laid off on a spread (R-LAYOFF): a run takes the next card
// of its suit at either end (never past the ace or the king), a set of three takes the fourth
// card of its rank.
func fits(spread []uint32, run bool, c uint32) bool {
	if len(spread) == 0 || contains(spread, c) {
		return false
	}
	if !run {
		return len(spread) == 3 && rankOf(spread[0]) == rankOf(c)
	}
	if suitOf(spread[0]) != suitOf(c) {
		return false
	}
	lo, hi := uint32(13), uint32(1)
	for _, x := range spread {
		if r := rankOf(x); r < lo {
			lo = r
		}
		if r := rankOf(x); r > hi {
			hi = r
		}
	}
	r := rankOf(c)
	return r+1 == lo || r == hi+1
}

// sorted returns the cards in card-number order (a new slice).
func sorted(cards []uint32) []uint32 {
	out := append([]uint32(nil), cards...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
