#!/usr/bin/env node
// A starter bot for the card game 1000 on a Thousand Arena server.
//
//   npm ci
//   THOUSAND_BOT_TOKEN=... node bot.js --gateway localhost:50051
//
// It opens one Play stream, answers every decision request with a legal action chosen by
// the simple heuristic in `decide`, and reconnects with exponential backoff when the stream
// breaks. The protocol is read at start-up from the .proto files (no generated code): by
// default from ../../proto in this repository, or from THOUSAND_PROTO_DIR.
'use strict';

const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const VERSION = '0.1.0';
// The arena's keepalive settings (docs/protocol.md, "Keepalive"): ping an idle stream
// every 20 s, give up on it when the answer takes more than 10 s. The gateway accepts a
// ping every 10 s, so these never count as abuse. THOUSAND_BOT_KEEPALIVE_MS scales both
// (tests use a fraction of a second).
const KEEPALIVE_TIME_MS = 20000;
const KEEPALIVE_TIMEOUT_MS = 10000;

function keepaliveOptions(env = process.env) {
  const raw = Number.parseInt(env.THOUSAND_BOT_KEEPALIVE_MS || '', 10);
  const time = Number.isInteger(raw) && raw > 0 ? raw : KEEPALIVE_TIME_MS;
  return {
    'grpc.keepalive_time_ms': time,
    'grpc.keepalive_timeout_ms': Math.max(1, Math.round((KEEPALIVE_TIMEOUT_MS * time) / KEEPALIVE_TIME_MS)),
    'grpc.keepalive_permit_without_calls': 1,
  };
}
const RANKS = '789JQKTA';
const POINTS = { 7: 0, 8: 0, 9: 0, J: 2, Q: 3, K: 4, T: 10, A: 11 };
// A refused credential or request cannot get better by retrying.
const PERMANENT = new Set([
  grpc.status.UNAUTHENTICATED,
  grpc.status.PERMISSION_DENIED,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.UNIMPLEMENTED,
]);

function parseArgs(argv) {
  const opts = {
    server: process.env.THOUSAND_BOT_GATEWAY || process.env.THOUSAND_BOT_SERVER || 'localhost:50051',
    token: process.env.THOUSAND_BOT_TOKEN || '',
    protoDir: process.env.THOUSAND_PROTO_DIR || path.join(__dirname, '..', '..', 'proto'),
    matches: 0, // stop after this many finished matches; 0: play until stopped
    maxAttempts: 0, // give up after this many failed connections in a row; 0: never
  };
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${arg} needs a value`);
      i += 1;
      return argv[i];
    };
    // --server: the option's earlier name, kept working.
    if (arg === '--gateway' || arg === '--server') opts.server = value();
    else if (arg === '--token') opts.token = value();
    else if (arg === '--proto-dir') opts.protoDir = value();
    else if (arg === '--matches') opts.matches = Number.parseInt(value(), 10);
    else if (arg === '--max-attempts') opts.maxAttempts = Number.parseInt(value(), 10);
    else if (arg === '--help' || arg === '-h') opts.help = true;
    else throw new Error(`unknown argument ${arg}`);
  }
  return opts;
}

function loadProtocol(protoDir) {
  const definition = protoLoader.loadSync('thousand/v1/bot.proto', {
    includeDirs: [protoDir],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition).thousand.v1;
}

// --- the heuristic ------------------------------------------------------------------------

const verb = (action) => action.split(' ', 1)[0];
const cardOf = (action) => action.split(' ')[1];
const strength = (card) => RANKS.indexOf(card[0]);
const points = (card) => POINTS[card[0]];

function beats(card, best, trump) {
  if (card[1] === best[1]) return strength(card) > strength(best);
  return Boolean(trump) && card[1] === trump;
}

// Choose an action from `legal` for the seat that sees `obs`.
//
// Never `concede` while anything else is legal: giving a deal up is the one choice that
// always costs the contract, and the exchange lists it first.
// Auction: pass unless forced. Talon and exchange: the first legal action (but `concede`).
// Contract: the lowest contract offered. Play: declare a marriage when possible; when
// leading, lead the strongest card; when following, take the trick as cheaply as
// possible, else throw the cheapest card.
function decide(obs, legal) {
  const playable = legal.filter((a) => a !== 'concede');
  const choices = playable.length > 0 ? playable : legal;
  if (choices.includes('pass')) return 'pass';
  const contracts = choices.filter((a) => verb(a) === 'contract');
  if (contracts.length > 0) {
    contracts.sort((a, b) => Number(a.split(' ')[1]) - Number(b.split(' ')[1]));
    return contracts[0];
  }
  const plays = choices.filter((a) => ['play', 'marry'].includes(verb(a)));
  if (plays.length === 0) return choices[0];
  const marriage = plays.find((a) => verb(a) === 'marry');
  if (marriage) return marriage;
  const trick = (obs.trick || []).filter((t) => t.card !== 'XX');
  const trump = obs.trump || '';
  const byCheapness = [...plays].sort(
    (a, b) => points(cardOf(a)) - points(cardOf(b)) || strength(cardOf(a)) - strength(cardOf(b)),
  );
  if (trick.length === 0) {
    return byCheapness[byCheapness.length - 1];
  }
  let best = trick[0].card;
  for (const t of trick.slice(1)) if (beats(t.card, best, trump)) best = t.card;
  const winning = byCheapness.filter((a) => beats(cardOf(a), best, trump));
  return winning.length > 0 ? winning[0] : byCheapness[0];
}

// --- the connection -----------------------------------------------------------------------

function log(...args) {
  console.error(new Date().toISOString(), ...args);
}

function playSession(client, opts, state) {
  return new Promise((resolve) => {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${opts.token}`);
    const call = client.Play(metadata);
    let settled = false;
    const finish = (outcome) => {
      if (!settled) {
        settled = true;
        resolve(outcome);
      }
    };
    call.write({
      hello: {
        name: '',
        version: VERSION,
        max_concurrent_matches: 0,
        client: `thousand-bot-js/${VERSION}`,
      },
    });
    call.on('data', (message) => {
      if (message.welcome) {
        state.welcomed = true;
        log(`connected as ${message.welcome.instance_id}`);
      } else if (message.decision_request) {
        const req = message.decision_request;
        const started = process.hrtime.bigint();
        let action;
        try {
          action = decide(req.observation, req.legal_actions);
        } catch (err) {
          // As everywhere in the arena: a bot that raised gives a malformed answer, and the
          // referee plays its fallback and counts a strike. The answer names the error.
          log(`decide failed on ${req.request_id}; the referee plays its fallback and counts `
            + `a strike: ${err.stack || err}`);
          action = `raised ${(err && err.name) || 'Error'}: ${(err && err.message) || err}`
            .slice(0, 64);
        }
        const thinkUs = (process.hrtime.bigint() - started) / 1000n;
        call.write({
          decision: { request_id: req.request_id, action, think_time_us: thinkUs.toString() },
        });
        state.decisions += 1;
      } else if (message.event) {
        if (message.event.type === 'match_end') {
          state.matchesDone += 1;
          const end = message.event.match_end;
          log(`match ${message.event.match_id} ended: ${end.status} scores ${end.scores}`);
          if (opts.matches > 0 && state.matchesDone >= opts.matches) {
            call.end();
            call.cancel();
            finish({ done: true });
          }
        }
      } else if (message.error) {
        log(`server refused ${message.error.request_id}: ${message.error.reason}`);
      }
    });
    call.on('error', (err) => finish({ error: err }));
    call.on('end', () => finish({ error: null }));
  });
}

async function run(opts) {
  const proto = loadProtocol(opts.protoDir);
  const client = new proto.BotService(
    opts.server,
    grpc.credentials.createInsecure(),
    keepaliveOptions(),
  );
  const state = { decisions: 0, matchesDone: 0, welcomed: false };
  let delay = 500;
  let failures = 0;
  for (;;) {
    state.welcomed = false;
    const outcome = await playSession(client, opts, state);
    if (outcome.done) break;
    const err = outcome.error;
    if (err && PERMANENT.has(err.code)) {
      log(`the server refused the bot: ${err.details}`);
      client.close();
      return 4;
    }
    if (state.welcomed) {
      failures = 0;
      delay = 500;
    } else {
      failures += 1;
      if (opts.maxAttempts > 0 && failures >= opts.maxAttempts) {
        log(`giving up after ${failures} failed attempts`);
        client.close();
        return 3;
      }
    }
    const wait = delay * (1 + 0.25 * Math.random());
    log(`disconnected (${err ? err.details || err.message : 'stream ended'}); retry in ${Math.round(wait)} ms`);
    await new Promise((r) => setTimeout(r, wait));
    if (!state.welcomed) delay = Math.min(delay * 2, 30000);
  }
  client.close();
  log(`done: ${state.decisions} decisions in ${state.matchesDone} matches`);
  return 0;
}

module.exports = {
  decide, beats, parseArgs, keepaliveOptions, KEEPALIVE_TIME_MS, KEEPALIVE_TIMEOUT_MS,
};

if (require.main === module) {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (err) {
    console.error(`thousand-bot-js: ${err.message}`);
    process.exit(2);
  }
  if (opts.help || !opts.token) {
    console.error('usage: node bot.js --gateway HOST:PORT --token TOKEN [--matches N]');
    console.error('       (or set THOUSAND_BOT_GATEWAY and THOUSAND_BOT_TOKEN)');
    process.exit(opts.help ? 0 : 2);
  }
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(0));
  run(opts).then((code) => process.exit(code));
}
