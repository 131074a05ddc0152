'use strict';
// Unit tests of the starter bot's heuristic: `npm test` (node's built-in runner).
const test = require('node:test');
const assert = require('node:assert');
const { decide, beats, parseArgs } = require('../bot.js');

test('passes in the auction when it may', () => {
  assert.strictEqual(decide({}, ['pass', 'bid 105', 'bid 110']), 'pass');
});

test('bids when passing is not allowed', () => {
  assert.strictEqual(decide({}, ['bid 100']), 'bid 100');
});

test('names the lowest contract', () => {
  assert.strictEqual(decide({}, ['contract 130', 'contract 120', 'concede']), 'contract 120');
});

test('never concedes while anything else is legal', () => {
  // The exchange lists `concede` first: the starter gives a card away instead.
  assert.strictEqual(decide({}, ['concede', 'give JC 0', 'give QC 1']), 'give JC 0');
  assert.strictEqual(decide({}, ['concede', 'contract 120']), 'contract 120');
  assert.strictEqual(decide({}, ['concede']), 'concede');
});

test('declares a marriage when it can', () => {
  assert.strictEqual(decide({ trick: [] }, ['play 9H', 'marry KH', 'play AS']), 'marry KH');
});

test('leads its strongest card', () => {
  assert.strictEqual(decide({ trick: [] }, ['play 9H', 'play AS', 'play KD']), 'play AS');
});

test('takes a trick as cheaply as possible', () => {
  const obs = { trick: [{ seat: 1, card: 'KS' }], trump: 'H' };
  assert.strictEqual(decide(obs, ['play AS', 'play TS', 'play 9S']), 'play TS');
});

test('trumps when it cannot follow', () => {
  const obs = { trick: [{ seat: 1, card: 'AS' }], trump: 'H' };
  assert.strictEqual(decide(obs, ['play 9H', 'play AH', 'play 9D']), 'play 9H');
});

test('throws its cheapest card when it cannot win', () => {
  const obs = { trick: [{ seat: 1, card: 'AS' }], trump: '' };
  assert.strictEqual(decide(obs, ['play KD', 'play 9C', 'play TH']), 'play 9C');
});

test('a trump beats a higher card of another suit', () => {
  assert.ok(beats('9H', 'AS', 'H'));
  assert.ok(!beats('AD', '9S', 'H'));
});

test('parses the command line', () => {
  const opts = parseArgs(['--gateway', 'h:1', '--token', 't', '--matches', '2']);
  assert.strictEqual(opts.server, 'h:1');
  assert.strictEqual(parseArgs(['--server', 'h:2']).server, 'h:2'); // the earlier name
  assert.strictEqual(opts.token, 't');
  assert.strictEqual(opts.matches, 2);
  assert.throws(() => parseArgs(['--bogus']), /unknown argument/);
});
