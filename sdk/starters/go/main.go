// A starter bot for the card game 1000 on Thousand Arena, in Go with the standard library
// only. It speaks the arena's text protocol on stdin/stdout (docs/stdio.md): it says
// hello, then answers every request with one line, one of the legal actions.
//
//	go build -o mybot .
//	arena match cmd:./mybot greedy random
//
// Make it yours by changing decide. Anything you print on stdout is an answer: debug
// output goes to stderr.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

const ranks = "789JQKTA"

func strength(card string) int { return strings.IndexByte(ranks, card[0]) }

func points(card string) int {
	switch card[0] {
	case 'A':
		return 11
	case 'T':
		return 10
	case 'K':
		return 4
	case 'Q':
		return 3
	case 'J':
		return 2
	}
	return 0
}

// Marriage values of the classic rules (other presets differ a little).
func marriageValue(suit byte) int {
	switch suit {
	case 'H':
		return 100
	case 'D':
		return 80
	case 'C':
		return 60
	}
	return 40
}

// split returns the items of a list value (none for an empty value).
func split(value string) []string {
	if value == "" {
		return nil
	}
	return strings.Split(value, ",")
}

// cardOf returns the card of an action such as "play QS" or "give 9H 2".
func cardOf(action string) string {
	parts := strings.Fields(action)
	if len(parts) < 2 || len(parts[1]) != 2 {
		return "??"
	}
	return parts[1]
}

// numberOf returns the number of an action such as "bid 120".
func numberOf(action string) int {
	parts := strings.Fields(action)
	n, _ := strconv.Atoi(parts[len(parts)-1])
	return n
}

func inHand(hand []string, rank, suit byte) bool {
	for _, c := range hand {
		if c[0] == rank && c[1] == suit {
			return true
		}
	}
	return false
}

func beats(card, best string, trump byte) bool {
	if card[1] == best[1] {
		return strength(card) > strength(best)
	}
	return trump != 0 && card[1] == trump
}

// cheaper: fewer points, then lower rank.
func cheaper(a, b string) bool {
	if points(a) != points(b) {
		return points(a) < points(b)
	}
	return strength(a) < strength(b)
}

// decide chooses one of the legal actions for the seat that sees these fields.
func decide(fields map[string]string, legal []string) string {
	hand := split(fields["hand"])
	trick := split(fields["trick"])
	var trump byte
	if t := fields["trump"]; t != "-" && t != "" {
		trump = t[0]
	}
	first := ""
	hasPass := false
	for _, a := range legal {
		if first == "" && a != "concede" && !strings.HasPrefix(a, "crawl ") {
			first = a
		}
		if a == "pass" {
			hasPass = true
		}
		if a == "look" || a == "keep" { // no blind bids, no sale
			return a
		}
	}
	if first == "" {
		first = legal[0]
	}

	// The auction: bid while the hand is worth it (card points, marriages, a talon).
	worth := 30
	for _, c := range hand {
		worth += points(c)
		if c[0] == 'K' && inHand(hand, 'Q', c[1]) {
			worth += marriageValue(c[1])
		}
	}
	lowestBid, lowestContract := "", ""
	for _, a := range legal {
		if strings.HasPrefix(a, "bid ") && numberOf(a) <= worth &&
			(lowestBid == "" || numberOf(a) < numberOf(lowestBid)) {
			lowestBid = a
		}
		if strings.HasPrefix(a, "contract ") &&
			(lowestContract == "" || numberOf(a) < numberOf(lowestContract)) {
			lowestContract = a
		}
	}
	if lowestBid != "" {
		return lowestBid
	}
	if hasPass { // also: no redeal, no buying a talon
		return "pass"
	}
	if lowestContract != "" {
		return lowestContract
	}

	// Cards leaving the hand: the cheapest one that is not half of a marriage.
	best, bestScore := "", 1<<30
	for _, a := range legal {
		if strings.HasPrefix(a, "give ") || strings.HasPrefix(a, "discard ") ||
			strings.HasPrefix(a, "bank ") {
			card := cardOf(a)
			score := points(card)*10 + strength(card)
			if (card[0] == 'K' && inHand(hand, 'Q', card[1])) ||
				(card[0] == 'Q' && inHand(hand, 'K', card[1])) {
				score += 1000
			}
			if score < bestScore {
				best, bestScore = a, score
			}
		}
	}
	if best != "" {
		return best
	}

	// Naming trumps: the suit it holds most of.
	most := -1
	for _, a := range legal {
		if strings.HasPrefix(a, "trump ") {
			count := 0
			for _, c := range hand {
				if c[1] == a[6] {
					count++
				}
			}
			if count > most {
				best, most = a, count
			}
		}
	}
	if best != "" {
		return best
	}

	// The play: declare the best marriage it may; lead the strongest card; win a trick
	// as cheaply as it can; otherwise throw the cheapest card.
	value := -1
	for _, a := range legal {
		if strings.HasPrefix(a, "marry ") && marriageValue(a[7]) > value {
			best, value = a, marriageValue(a[7])
		}
	}
	if best != "" {
		return best
	}
	bestCard := ""
	for _, item := range trick {
		card := item[strings.IndexByte(item, ':')+1:]
		if card == "XX" {
			continue
		}
		if bestCard == "" || beats(card, bestCard, trump) {
			bestCard = card
		}
	}
	winner, cheapest, strongest := "", "", ""
	for _, a := range legal {
		if !strings.HasPrefix(a, "play ") {
			continue
		}
		card := cardOf(a)
		if cheapest == "" || cheaper(card, cardOf(cheapest)) {
			cheapest = a
		}
		if strongest == "" || strength(card) > strength(cardOf(strongest)) {
			strongest = a
		}
		if bestCard != "" && beats(card, bestCard, trump) &&
			(winner == "" || cheaper(card, cardOf(winner))) {
			winner = a
		}
	}
	switch {
	case bestCard == "" && strongest != "":
		return strongest
	case winner != "":
		return winner
	case cheapest != "":
		return cheapest
	}
	return first
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 1<<16)
	out := bufio.NewWriter(os.Stdout)
	readLine := func() (string, bool) {
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return "", false
		}
		return strings.TrimRight(line, "\r\n"), true
	}
	fmt.Fprintln(out, "hello 1 version=1.0 events=all client=starter-go/1")
	out.Flush()
	for {
		line, ok := readLine()
		if !ok {
			return
		}
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "request", "event":
			count, _ := strconv.Atoi(words[len(words)-1])
			fields := make(map[string]string, count)
			for i := 0; i < count; i++ {
				item, ok := readLine()
				if !ok {
					return
				}
				key, value, _ := strings.Cut(item, " ")
				fields[key] = value
			}
			if words[0] == "request" {
				legal := split(fields["legal"])
				answer := "pass"
				if len(legal) > 0 {
					answer = decide(fields, legal)
				}
				fmt.Fprintln(out, answer)
				out.Flush()
			} else if len(words) > 3 && words[3] == "match_end" {
				fmt.Fprintf(os.Stderr, "match %s ended: %s, scores %s\n", words[1],
					fields["status"], fields["scores"])
			}
		case "error":
			fmt.Fprintln(os.Stderr, "refused:", line)
		case "bye":
			return
		}
	}
}
