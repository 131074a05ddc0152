/*
 * A starter bot for the card game 1000 on Thousand Arena, in Java with the standard
 * library only. It speaks the arena's text protocol on stdin/stdout (docs/stdio.md): it
 * says hello, then answers every request with one line, one of the legal actions.
 *
 *   javac -d build Bot.java
 *   arena match 'cmd:java -cp build Bot' greedy random
 *
 * Make it yours by changing decide(). Anything you print on stdout is an answer: debug
 * output goes to System.err.
 */
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public final class Bot {
    private static final String RANKS = "789JQKTA";

    static int strength(String card) {
        return RANKS.indexOf(card.charAt(0));
    }

    /** Card points by rank, in the order of RANKS. */
    private static final int[] POINTS = {0, 0, 0, 2, 3, 4, 10, 11};

    static int points(String card) {
        return POINTS[strength(card)];
    }

    /** Marriage values of the classic rules (other presets differ a little). */
    static int marriageValue(char suit) {
        switch (suit) {
            case 'H': return 100;
            case 'D': return 80;
            case 'C': return 60;
            default: return 40;
        }
    }

    /** The items of a list value (none for an empty value). */
    static List<String> split(String value) {
        List<String> items = new ArrayList<>();
        if (value == null || value.isEmpty()) return items;
        for (String item : value.split(",", -1)) items.add(item);
        return items;
    }

    /** The card of an action such as "play QS" or "give 9H 2". */
    static String cardOf(String action) {
        String[] parts = action.split(" ");
        return parts.length > 1 && parts[1].length() == 2 ? parts[1] : "??";
    }

    /** The number of an action such as "bid 120". */
    static int numberOf(String action) {
        try {
            return Integer.parseInt(action.substring(action.lastIndexOf(' ') + 1));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    static boolean inHand(List<String> hand, char rank, char suit) {
        for (String c : hand) if (c.charAt(0) == rank && c.charAt(1) == suit) return true;
        return false;
    }

    static boolean beats(String card, String best, char trump) {
        if (card.charAt(1) == best.charAt(1)) return strength(card) > strength(best);
        return trump != 0 && card.charAt(1) == trump;
    }

    /** Cheaper: fewer points, then lower rank. */
    static boolean cheaper(String a, String b) {
        if (points(a) != points(b)) return points(a) < points(b);
        return strength(a) < strength(b);
    }

    /** Choose one of the legal actions for the seat that sees these fields. */
    static String decide(Map<String, String> fields, List<String> legal) {
        List<String> hand = split(fields.get("hand"));
        List<String> trick = split(fields.get("trick"));
        String trumpField = fields.getOrDefault("trump", "-");
        char trump = trumpField.isEmpty() || trumpField.equals("-") ? 0 : trumpField.charAt(0);
        String first = null;
        boolean hasPass = false;
        for (String a : legal) {
            if (first == null && !a.equals("concede") && !a.startsWith("crawl ")) first = a;
            if (a.equals("pass")) hasPass = true;
            if (a.equals("look") || a.equals("keep")) return a; // no blind bids, no sale
        }
        if (first == null) first = legal.get(0);

        // The auction: bid while the hand is worth it (card points, marriages, a talon).
        int worth = 30;
        for (String c : hand) {
            worth += points(c);
            if (c.charAt(0) == 'K' && inHand(hand, 'Q', c.charAt(1))) worth += marriageValue(c.charAt(1));
        }
        String lowestBid = null, lowestContract = null;
        for (String a : legal) {
            if (a.startsWith("bid ") && numberOf(a) <= worth
                    && (lowestBid == null || numberOf(a) < numberOf(lowestBid))) lowestBid = a;
            if (a.startsWith("contract ")
                    && (lowestContract == null || numberOf(a) < numberOf(lowestContract))) lowestContract = a;
        }
        if (lowestBid != null) return lowestBid;
        if (hasPass) return "pass"; // also: no redeal, no buying a talon
        if (lowestContract != null) return lowestContract;

        // Cards leaving the hand: the cheapest one that is not half of a marriage.
        String best = null;
        int bestScore = Integer.MAX_VALUE;
        for (String a : legal) {
            if (a.startsWith("give ") || a.startsWith("discard ") || a.startsWith("bank ")) {
                String card = cardOf(a);
                boolean half = (card.charAt(0) == 'K' && inHand(hand, 'Q', card.charAt(1)))
                        || (card.charAt(0) == 'Q' && inHand(hand, 'K', card.charAt(1)));
                int score = (half ? 1000 : 0) + points(card) * 10 + strength(card);
                if (score < bestScore) {
                    best = a;
                    bestScore = score;
                }
            }
        }
        if (best != null) return best;

        // Naming trumps: the suit it holds most of.
        int most = -1;
        for (String a : legal) {
            if (a.startsWith("trump ")) {
                int count = 0;
                for (String c : hand) if (c.charAt(1) == a.charAt(6)) count++;
                if (count > most) {
                    best = a;
                    most = count;
                }
            }
        }
        if (best != null) return best;

        // The play: declare the best marriage it may; lead the strongest card; win a trick
        // as cheaply as it can; otherwise throw the cheapest card.
        int value = -1;
        for (String a : legal) {
            if (a.startsWith("marry ") && marriageValue(a.charAt(7)) > value) {
                best = a;
                value = marriageValue(a.charAt(7));
            }
        }
        if (best != null) return best;
        String bestCard = null;
        for (String item : trick) {
            String card = item.substring(item.indexOf(':') + 1);
            if (card.equals("XX")) continue;
            if (bestCard == null || beats(card, bestCard, trump)) bestCard = card;
        }
        String winner = null, cheapest = null, strongest = null;
        for (String a : legal) {
            if (!a.startsWith("play ")) continue;
            String card = cardOf(a);
            if (cheapest == null || cheaper(card, cardOf(cheapest))) cheapest = a;
            if (strongest == null || strength(card) > strength(cardOf(strongest))) strongest = a;
            if (bestCard != null && beats(card, bestCard, trump)
                    && (winner == null || cheaper(card, cardOf(winner)))) winner = a;
        }
        if (bestCard == null && strongest != null) return strongest;
        if (winner != null) return winner;
        if (cheapest != null) return cheapest;
        return first;
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        out.print("hello 1 version=1.0 events=all client=starter-java/1\n");
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ");
            String kind = words[0];
            if (kind.equals("request") || kind.equals("event")) {
                int count = Integer.parseInt(words[words.length - 1]);
                Map<String, String> fields = new HashMap<>();
                for (int i = 0; i < count; i++) {
                    String item = in.readLine();
                    if (item == null) return;
                    int space = item.indexOf(' ');
                    if (space < 0) fields.put(item, "");
                    else fields.put(item.substring(0, space), item.substring(space + 1));
                }
                if (kind.equals("request")) {
                    List<String> legal = split(fields.get("legal"));
                    out.print((legal.isEmpty() ? "pass" : decide(fields, legal)) + "\n");
                    out.flush();
                } else if (words.length > 3 && words[3].equals("match_end")) {
                    System.err.println("match " + words[1] + " ended: " + fields.get("status")
                            + ", scores " + fields.get("scores"));
                }
            } else if (kind.equals("error")) {
                System.err.println("refused: " + line);
            } else if (kind.equals("bye")) {
                return;
            }
        }
    }
}
