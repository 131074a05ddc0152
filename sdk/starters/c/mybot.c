/*
 * A starter bot for the card game 1000 on Thousand Arena, in C with the standard library
 * only. It speaks the arena's text protocol on stdin/stdout (docs/stdio.md): it says
 * hello, then answers every request with one line, one of the legal actions.
 *
 *   cc -O2 -o mybot mybot.c
 *   arena match cmd:./mybot greedy random
 *
 * Make it yours by changing decide() and the functions it calls. Anything you print on
 * stdout is an answer: debug output goes to stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_MAX_LEN 65536
#define MAX_FIELDS 64
#define MAX_ITEMS 128

/* One block of "KEY VALUE" lines (a request or an event). */
struct field {
    char key[64];
    char *value;
};
static struct field fields[MAX_FIELDS];
static int nfields;

static const char RANKS[] = "789JQKTA";

static int strength(const char *card) { return (int)(strchr(RANKS, card[0]) - RANKS); }

/* Card points by rank, in the order of RANKS. */
static const int POINTS[] = {0, 0, 0, 2, 3, 4, 10, 11};

static int points(const char *card) { return POINTS[strength(card)]; }

/* Marriage values of the classic rules (other presets differ a little). */
static int marriage_value(char suit) {
    switch (suit) {
    case 'H': return 100;
    case 'D': return 80;
    case 'C': return 60;
    default: return 40;
    }
}

static const char *field(const char *key) {
    for (int i = 0; i < nfields; i++)
        if (strcmp(fields[i].key, key) == 0) return fields[i].value;
    return "";
}

/* Split a list value on ',' into items (the value is modified). An empty value has none. */
static int split(char *value, char **items, int max) {
    int n = 0;
    if (*value == '\0') return 0;
    for (char *item = strtok(value, ","); item != NULL && n < max; item = strtok(NULL, ","))
        items[n++] = item;
    return n;
}

static int starts_with(const char *text, const char *prefix) {
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

/* The card of an action such as "play QS" or "give 9H 2". */
static void card_of(const char *action, char *card) {
    const char *space = strchr(action, ' ');
    card[0] = card[1] = '?';
    card[2] = '\0';
    if (space != NULL && strlen(space) >= 3) {
        card[0] = space[1];
        card[1] = space[2];
    }
}

/* The number of an action such as "bid 120". */
static int number_of(const char *action) {
    const char *space = strrchr(action, ' ');
    return space != NULL ? atoi(space + 1) : 0;
}

static int in_hand(char **hand, int nhand, char rank, char suit) {
    for (int i = 0; i < nhand; i++)
        if (hand[i][0] == rank && hand[i][1] == suit) return 1;
    return 0;
}

static int beats(const char *card, const char *best, char trump) {
    if (card[1] == best[1]) return strength(card) > strength(best);
    return trump != '\0' && card[1] == trump;
}

/* Cheaper first: fewer points, then lower rank. */
static int cheaper(const char *a, const char *b) {
    if (points(a) != points(b)) return points(a) < points(b);
    return strength(a) < strength(b);
}

/* Choose one of the legal actions for the seat that sees the fields of this request. */
static const char *decide(char **legal, int nlegal) {
    static char hand_value[4096], trick_value[4096];
    char *hand[MAX_ITEMS], *trick[MAX_ITEMS];
    snprintf(hand_value, sizeof hand_value, "%s", field("hand"));
    snprintf(trick_value, sizeof trick_value, "%s", field("trick"));
    int nhand = split(hand_value, hand, MAX_ITEMS);
    int ntrick = split(trick_value, trick, MAX_ITEMS);
    const char *trump_field = field("trump");
    char trump = strcmp(trump_field, "-") == 0 ? '\0' : trump_field[0];
    const char *first = NULL, *best = NULL, *lowest_contract = NULL, *lowest_bid = NULL;
    int has_pass = 0;

    for (int i = 0; i < nlegal; i++) {
        const char *a = legal[i];
        if (first == NULL && strcmp(a, "concede") != 0 && !starts_with(a, "crawl ")) first = a;
        if (strcmp(a, "pass") == 0) has_pass = 1;
        if (strcmp(a, "look") == 0 || strcmp(a, "keep") == 0) return a; /* no blind bids, no sale */
    }
    if (first == NULL) first = legal[0];

    /* The auction: bid while the hand is worth it (card points, marriages, a talon). */
    int worth = 30;
    for (int i = 0; i < nhand; i++) {
        worth += points(hand[i]);
        if (hand[i][0] == 'K' && in_hand(hand, nhand, 'Q', hand[i][1]))
            worth += marriage_value(hand[i][1]);
    }
    for (int i = 0; i < nlegal; i++) {
        if (starts_with(legal[i], "bid ") && number_of(legal[i]) <= worth &&
            (lowest_bid == NULL || number_of(legal[i]) < number_of(lowest_bid)))
            lowest_bid = legal[i];
        if (starts_with(legal[i], "contract ") &&
            (lowest_contract == NULL || number_of(legal[i]) < number_of(lowest_contract)))
            lowest_contract = legal[i];
    }
    if (lowest_bid != NULL) return lowest_bid;
    if (has_pass) return "pass"; /* also: no redeal, no buying a talon */
    if (lowest_contract != NULL) return lowest_contract;

    /* Cards leaving the hand: the cheapest one that is not half of a marriage. */
    int best_score = 1 << 30;
    for (int i = 0; i < nlegal; i++) {
        const char *a = legal[i];
        if (starts_with(a, "give ") || starts_with(a, "discard ") || starts_with(a, "bank ")) {
            char card[3];
            card_of(a, card);
            int half = (card[0] == 'K' && in_hand(hand, nhand, 'Q', card[1])) ||
                       (card[0] == 'Q' && in_hand(hand, nhand, 'K', card[1]));
            int score = half * 1000 + points(card) * 10 + strength(card);
            if (score < best_score) {
                best_score = score;
                best = a;
            }
        }
    }
    if (best != NULL) return best;

    /* Naming trumps: the suit it holds most of. */
    for (int i = 0, most = -1; i < nlegal; i++) {
        if (starts_with(legal[i], "trump ")) {
            int count = 0;
            for (int j = 0; j < nhand; j++) count += hand[j][1] == legal[i][6];
            if (count > most) {
                most = count;
                best = legal[i];
            }
        }
    }
    if (best != NULL) return best;

    /* The play: declare the best marriage it may; lead the strongest card; win a trick
       as cheaply as it can; otherwise throw the cheapest card. */
    for (int i = 0, value = -1; i < nlegal; i++) {
        if (starts_with(legal[i], "marry ") && marriage_value(legal[i][7]) > value) {
            value = marriage_value(legal[i][7]);
            best = legal[i];
        }
    }
    if (best != NULL) return best;
    const char *winner = NULL, *cheapest = NULL, *strongest = NULL;
    char led[3] = "", best_card[3] = "";
    for (int i = 0; i < ntrick; i++) {
        const char *card = strchr(trick[i], ':') + 1;
        if (strcmp(card, "XX") == 0) continue;
        if (led[0] == '\0' || beats(card, best_card, trump)) {
            snprintf(best_card, sizeof best_card, "%s", card);
            led[0] = 'y';
        }
    }
    for (int i = 0; i < nlegal; i++) {
        if (!starts_with(legal[i], "play ")) continue;
        char card[3], other[3];
        card_of(legal[i], card);
        if (cheapest == NULL || (card_of(cheapest, other), cheaper(card, other))) cheapest = legal[i];
        if (strongest == NULL || (card_of(strongest, other), strength(card) > strength(other)))
            strongest = legal[i];
        if (led[0] != '\0' && beats(card, best_card, trump) &&
            (winner == NULL || (card_of(winner, other), cheaper(card, other))))
            winner = legal[i];
    }
    if (led[0] == '\0' && strongest != NULL) return strongest;
    if (winner != NULL) return winner;
    if (cheapest != NULL) return cheapest;
    return first;
}

static char *read_line(char *buffer) {
    if (fgets(buffer, LINE_MAX_LEN, stdin) == NULL) return NULL;
    buffer[strcspn(buffer, "\r\n")] = '\0';
    return buffer;
}

/* Read the N lines of a block into fields[]. */
static void read_block(int count) {
    static char line[LINE_MAX_LEN];
    for (int i = 0; i < nfields; i++) free(fields[i].value);
    nfields = 0;
    for (int i = 0; i < count && read_line(line) != NULL; i++) {
        if (nfields == MAX_FIELDS) continue;
        char *space = strchr(line, ' ');
        const char *value = space != NULL ? space + 1 : "";
        if (space != NULL) *space = '\0';
        snprintf(fields[nfields].key, sizeof fields[nfields].key, "%.63s", line);
        fields[nfields].value = malloc(strlen(value) + 1);
        if (fields[nfields].value == NULL) exit(1);
        strcpy(fields[nfields].value, value);
        nfields++;
    }
}

int main(void) {
    static char line[LINE_MAX_LEN], legal_value[LINE_MAX_LEN];
    char kind[16];
    /* Line buffering: every answer leaves at its newline. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("hello 1 version=1.0 events=all client=starter-c/1\n");
    while (read_line(line) != NULL) {
        if (sscanf(line, "%15s", kind) != 1) continue;
        if (strcmp(kind, "request") == 0 || strcmp(kind, "event") == 0) {
            read_block(atoi(strrchr(line, ' ') + 1));
            if (strcmp(kind, "request") == 0) {
                char *legal[MAX_ITEMS];
                snprintf(legal_value, sizeof legal_value, "%s", field("legal"));
                int nlegal = split(legal_value, legal, MAX_ITEMS);
                printf("%s\n", nlegal > 0 ? decide(legal, nlegal) : "pass");
            } else {
                char match[256], type[64];
                if (sscanf(line, "event %255s %*s %63s", match, type) == 2 &&
                    strcmp(type, "match_end") == 0)
                    fprintf(stderr, "match %s ended: %s, scores %s\n", match, field("status"),
                            field("scores"));
            }
        } else if (strcmp(kind, "error") == 0) {
            fprintf(stderr, "refused: %s\n", line);
        } else if (strcmp(kind, "bye") == 0) {
            break;
        }
    }
    return 0;
}
