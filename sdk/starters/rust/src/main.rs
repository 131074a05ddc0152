//! A starter bot for the card game 1000 on Thousand Arena, in Rust with the standard
//! library only. It speaks the arena's text protocol on stdin/stdout (docs/stdio.md): it
//! says hello, then answers every request with one line, one of the legal actions.
//!
//!     cargo build --release
//!     arena match cmd:target/release/mybot greedy random
//!
//! Make it yours by changing `decide`. Anything you print on stdout is an answer: debug
//! output goes to stderr (`eprintln!`).

use std::collections::HashMap;
use std::io::{self, BufRead, Write};

const RANKS: &str = "789JQKTA";

fn strength(card: &str) -> i32 {
    RANKS.find(&card[..1]).map_or(-1, |i| i as i32)
}

fn points(card: &str) -> i32 {
    match card.as_bytes()[0] {
        b'A' => 11,
        b'T' => 10,
        b'K' => 4,
        b'Q' => 3,
        b'J' => 2,
        _ => 0,
    }
}

/// Marriage values of the classic rules (other presets differ a little).
fn marriage_value(suit: u8) -> i32 {
    match suit {
        b'H' => 100,
        b'D' => 80,
        b'C' => 60,
        _ => 40,
    }
}

/// The items of a list value (none for an empty value).
fn split(value: &str) -> Vec<&str> {
    if value.is_empty() {
        Vec::new()
    } else {
        value.split(',').collect()
    }
}

/// The card of an action such as "play QS" or "give 9H 2".
fn card_of(action: &str) -> &str {
    match action.split(' ').nth(1) {
        Some(card) if card.len() == 2 => card,
        _ => "??",
    }
}

/// The number of an action such as "bid 120".
fn number_of(action: &str) -> i32 {
    action.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn in_hand(hand: &[&str], rank: u8, suit: u8) -> bool {
    hand.iter().any(|c| c.as_bytes()[0] == rank && c.as_bytes()[1] == suit)
}

fn suit(card: &str) -> u8 {
    card.as_bytes()[1]
}

fn beats(card: &str, best: &str, trump: Option<u8>) -> bool {
    if suit(card) == suit(best) {
        return strength(card) > strength(best);
    }
    trump == Some(suit(card))
}

/// Cheaper: fewer points, then lower rank.
fn cheaper(a: &str, b: &str) -> bool {
    (points(a), strength(a)) < (points(b), strength(b))
}

/// Choose one of the legal actions for the seat that sees these fields.
fn decide<'a>(fields: &HashMap<String, String>, legal: &[&'a str]) -> &'a str {
    let get = |key: &str| fields.get(key).map(String::as_str).unwrap_or("");
    let hand = split(get("hand"));
    let trick = split(get("trick"));
    let trump = match get("trump") {
        "" | "-" => None,
        t => Some(t.as_bytes()[0]),
    };
    let mut first: Option<&str> = None;
    let mut has_pass = false;
    for &a in legal {
        if first.is_none() && a != "concede" && !a.starts_with("crawl ") {
            first = Some(a);
        }
        if a == "pass" {
            has_pass = true;
        }
        if a == "look" || a == "keep" {
            return a; // no blind bids, no sale
        }
    }
    let first = first.unwrap_or(legal[0]);

    // The auction: bid while the hand is worth it (card points, marriages, a talon).
    let mut worth = 30;
    for c in &hand {
        worth += points(c);
        if c.as_bytes()[0] == b'K' && in_hand(&hand, b'Q', suit(c)) {
            worth += marriage_value(suit(c));
        }
    }
    let mut lowest_bid: Option<&str> = None;
    let mut lowest_contract: Option<&str> = None;
    for &a in legal {
        if a.starts_with("bid ")
            && number_of(a) <= worth
            && lowest_bid.map_or(true, |b| number_of(a) < number_of(b))
        {
            lowest_bid = Some(a);
        }
        if a.starts_with("contract ") && lowest_contract.map_or(true, |b| number_of(a) < number_of(b)) {
            lowest_contract = Some(a);
        }
    }
    if let Some(bid) = lowest_bid {
        return bid;
    }
    if has_pass {
        return "pass"; // also: no redeal, no buying a talon
    }
    if let Some(contract) = lowest_contract {
        return contract;
    }

    // Cards leaving the hand: the cheapest one that is not half of a marriage.
    let leaving = legal
        .iter()
        .copied()
        .filter(|a| a.starts_with("give ") || a.starts_with("discard ") || a.starts_with("bank "))
        .min_by_key(|&a| {
            let card = card_of(a);
            let (rank, s) = (card.as_bytes()[0], suit(card));
            let half = (rank == b'K' && in_hand(&hand, b'Q', s)) || (rank == b'Q' && in_hand(&hand, b'K', s));
            (if half { 1000 } else { 0 }) + points(card) * 10 + strength(card)
        });
    if let Some(a) = leaving {
        return a;
    }

    // Naming trumps: the suit it holds most of (the first such, as offered).
    let trumps = legal
        .iter()
        .copied()
        .filter(|a| a.starts_with("trump "))
        .min_by_key(|a| std::cmp::Reverse(hand.iter().filter(|c| suit(c) == a.as_bytes()[6]).count()));
    if let Some(a) = trumps {
        return a;
    }

    // The play: declare the best marriage it may; lead the strongest card; win a trick as
    // cheaply as it can; otherwise throw the cheapest card.
    let marriage = legal
        .iter()
        .copied()
        .filter(|a| a.starts_with("marry "))
        .min_by_key(|a| std::cmp::Reverse(marriage_value(a.as_bytes()[7])));
    if let Some(a) = marriage {
        return a;
    }
    let mut best_card: Option<&str> = None;
    for item in &trick {
        let card = &item[item.find(':').map_or(0, |i| i + 1)..];
        if card == "XX" {
            continue;
        }
        if best_card.map_or(true, |b| beats(card, b, trump)) {
            best_card = Some(card);
        }
    }
    let (mut winner, mut cheapest, mut strongest): (Option<&str>, Option<&str>, Option<&str>) =
        (None, None, None);
    for &a in legal {
        if !a.starts_with("play ") {
            continue;
        }
        let card = card_of(a);
        if cheapest.map_or(true, |b| cheaper(card, card_of(b))) {
            cheapest = Some(a);
        }
        if strongest.map_or(true, |b| strength(card) > strength(card_of(b))) {
            strongest = Some(a);
        }
        if let Some(top) = best_card {
            if beats(card, top, trump) && winner.map_or(true, |b| cheaper(card, card_of(b))) {
                winner = Some(a);
            }
        }
    }
    if best_card.is_none() {
        if let Some(a) = strongest {
            return a;
        }
    }
    winner.or(cheapest).unwrap_or(first)
}

fn main() {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut read_line = |line: &mut String| -> bool {
        line.clear();
        match input.read_line(line) {
            Ok(0) | Err(_) => false,
            Ok(_) => {
                let end = line.trim_end_matches(['\r', '\n']).len();
                line.truncate(end);
                true
            }
        }
    };
    writeln!(out, "hello 1 version=1.0 events=all client=starter-rust/1").unwrap();
    out.flush().unwrap();
    let mut line = String::new();
    let mut item = String::new();
    while read_line(&mut line) {
        let words: Vec<&str> = line.split(' ').collect();
        match words[0] {
            "request" | "event" => {
                let count: usize = words[words.len() - 1].parse().unwrap_or(0);
                let mut fields = HashMap::with_capacity(count);
                for _ in 0..count {
                    if !read_line(&mut item) {
                        return;
                    }
                    let (key, value) = item.split_once(' ').unwrap_or((item.as_str(), ""));
                    fields.insert(key.to_string(), value.to_string());
                }
                if words[0] == "request" {
                    let legal_value = fields.get("legal").cloned().unwrap_or_default();
                    let legal = split(&legal_value);
                    let answer = if legal.is_empty() { "pass" } else { decide(&fields, &legal) };
                    writeln!(out, "{answer}").unwrap();
                    out.flush().unwrap();
                } else if words.len() > 3 && words[3] == "match_end" {
                    let get = |key: &str| fields.get(key).cloned().unwrap_or_default();
                    eprintln!("match {} ended: {}, scores {}", words[1], get("status"), get("scores"));
                }
            }
            "error" => eprintln!("refused: {line}"),
            "bye" => return,
            _ => {}
        }
    }
}
