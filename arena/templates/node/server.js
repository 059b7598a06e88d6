// The gRPC side of a bot: what the arena calls, and how this bot answers.
//
// The arena is the gRPC client; the bot is the server of the service flipflop.v1.Bot
// (proto/flipflop/v1/bot.proto, copied here) and of the standard health check
// grpc.health.v1.Health (proto/grpc/health/v1/health.proto). For one match the arena calls:
//
//   Handshake   once per connection: agree on the protocol, say who we are, show the seat token
//   StartMatch  a match starts: our seat, the players, the rules, the time budget
//   Decide      each of our decisions: PHASE_START (drop or draw) or PHASE_PLAY (the rest)
//   HandEnded   after every hand: how it was settled
//   EndMatch    the match is over
//
// One process may play several matches at once: every call after the handshake names its
// match_id, so everything we know about a match is kept by match id.
//
// You should not need to change this file: the strategy is in bot.js.
'use strict';

const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const GRPC_VERSION = require('@grpc/grpc-js/package.json').version;

const PROTOCOL_VERSION = '1.2';
const DEFAULT_ENDPOINT = 'unix:/tmp/flipflop-bot.sock';
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024; // the arena's requests are at most 4 MiB
const NOTE_BYTES = 1024; // the arena keeps at most 1 KiB of a debug note

// How the .proto files become JavaScript objects (@grpc/proto-loader options):
// - keepCase: field names as in the .proto (match_id, drawn_from_discard), not camelCase;
// - longs: String: int64 fields (chips: stake, bankroll, pots) arrive as decimal strings, not
//   as Long objects; use Number(x) (every chip count fits a double) or BigInt(x);
// - enums: String: enum values are their names ('PHASE_START', 'ACTION_KIND_DROP');
// - defaults: true: fields left at their default are still there (0, '', []), EXCEPT the
//   proto3 `optional` ones (Observation.drawn_from_discard, Event.card): those are present only
//   when set. This matters because card 0 (the ace of clubs) is a real card: test with
//   `obs.drawn_from_discard !== undefined`, never with `if (obs.drawn_from_discard)`.
const LOAD_OPTIONS = { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true };
const PROTO_DIR = path.join(__dirname, 'proto');
const definition = protoLoader.loadSync(
  ['flipflop/v1/bot.proto', 'grpc/health/v1/health.proto'],
  { ...LOAD_OPTIONS, includeDirs: [PROTO_DIR] },
);
const loaded = grpc.loadPackageDefinition(definition);
const BotService = loaded.flipflop.v1.Bot.service;
const HealthService = loaded.grpc.health.v1.Health.service;

/** An error to answer a call with: a gRPC status code and a message for the arena's logs. */
class Refused extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** `text` cut to at most `limit` bytes of UTF-8, on a character boundary. */
function cutUtf8(text, limit) {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= limit) return text;
  let end = limit;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // not inside a multi-byte character
  return bytes.subarray(0, end).toString('utf8');
}

/**
 * Wrap a handler `(request) => response` as a gRPC unary handler: a thrown Refused answers
 * with its status code; any other exception (a bug in the bot) answers INTERNAL.
 */
function unary(name, handler) {
  return (call, callback) => {
    try {
      callback(null, handler(call.request));
    } catch (e) {
      if (e instanceof Refused) {
        callback({ code: e.code, details: e.message });
      } else {
        console.error(`${name} failed:`, e);
        callback({ code: grpc.status.INTERNAL, details: `${name} raised ${e && e.name}: ${e && e.message}` });
      }
    }
  };
}

/**
 * The flipflop.v1.Bot service around a bot. `makeBot()` returns a new bot object for each
 * match, with these methods (all but the first two optional):
 *   startTurn(obs, legal) -> action | [action, note]
 *   playTurn(obs, legal)  -> [action, ...] | [[action, ...], note]
 *   startMatch(info), handEnded(result), endMatch(result)
 * and the properties name and version (those of `identity`, a bot made once to tell them).
 */
function botService(makeBot, identity, seatToken) {
  const matches = new Map(); // match_id -> { info, bot }

  function match(matchId) {
    const m = matches.get(matchId);
    if (!m) {
      throw new Refused(
        grpc.status.FAILED_PRECONDITION,
        `unknown match ${JSON.stringify(matchId)}: no StartMatch for it, or it has ended`,
      );
    }
    return m;
  }

  return {
    Handshake: unary('Handshake', (request) => {
      // Only the major version must match: "1.x" talks to "1.y".
      const theirs = request.protocol_version || '';
      if (theirs.split('.')[0] !== PROTOCOL_VERSION.split('.')[0]) {
        throw new Refused(
          grpc.status.FAILED_PRECONDITION,
          `protocol version mismatch: the arena speaks ${theirs || '(none)'}, ` +
            `this bot speaks ${PROTOCOL_VERSION}; the major versions must match`,
        );
      }
      return {
        protocol_version: PROTOCOL_VERSION,
        name: String(identity.name),
        version: String(identity.version),
        // Optional capabilities. Not "decide-stream": this bot answers each decision with a
        // unary Decide call, which the arena then uses.
        features: ['concurrent-matches', 'debug-notes'],
        runtime: `node ${process.version} / grpc-js ${GRPC_VERSION}`.slice(0, 128),
        // Proves to the arena that this process is the one it started for the seat.
        seat_token: seatToken,
      };
    }),

    StartMatch: unary('StartMatch', (request) => {
      if (matches.has(request.match_id)) {
        throw new Refused(grpc.status.ALREADY_EXISTS, `match ${request.match_id} already started`);
      }
      const bot = makeBot(); // a fresh bot per match: its state lives on `this`
      matches.set(request.match_id, { info: request, bot });
      try {
        if (bot.startMatch) bot.startMatch(request);
      } catch (e) {
        matches.delete(request.match_id); // not started: a later StartMatch may try again
        throw e;
      }
      return {};
    }),

    Decide: unary('Decide', (request) => {
      const { info, bot } = match(request.match_id);
      const obs = request.observation;
      if (!obs || obs.seat !== info.seat) {
        throw new Refused(
          grpc.status.INVALID_ARGUMENT,
          `the observation is for seat ${obs && obs.seat}, the bot plays seat ${info.seat}`,
        );
      }
      let answer;
      if (obs.phase === 'PHASE_START') {
        answer = bot.startTurn(obs, request.legal);
      } else if (obs.phase === 'PHASE_PLAY') {
        answer = bot.playTurn(obs, request.legal);
      } else {
        throw new Refused(grpc.status.INVALID_ARGUMENT, `unknown phase ${obs.phase}`);
      }
      // An answer may come with a debug note: [answer, 'note'].
      let note = '';
      if (Array.isArray(answer) && answer.length === 2 && typeof answer[1] === 'string') {
        [answer, note] = answer;
      }
      const actions = obs.phase === 'PHASE_START' ? [answer] : answer;
      return { actions, note: cutUtf8(note, NOTE_BYTES) };
    }),

    HandEnded: unary('HandEnded', (request) => {
      const { bot } = match(request.match_id);
      if (bot.handEnded) bot.handEnded(request.result);
      return {};
    }),

    EndMatch: unary('EndMatch', (request) => {
      const { bot } = match(request.match_id);
      try {
        if (bot.endMatch) bot.endMatch(request.result);
      } finally {
        matches.delete(request.match_id);
      }
      return {};
    }),
  };
}

/** grpc.health.v1.Health: SERVING for "" and "flipflop.v1.Bot" until the server stops. */
function healthService(state) {
  const known = new Set(['', 'flipflop.v1.Bot']);
  return {
    Check: unary('Health.Check', (request) => {
      if (!known.has(request.service)) {
        throw new Refused(grpc.status.NOT_FOUND, `unknown service ${JSON.stringify(request.service)}`);
      }
      return { status: state.serving ? 'SERVING' : 'NOT_SERVING' };
    }),
    Watch: (call) => {
      call.destroy({ code: grpc.status.UNIMPLEMENTED, details: 'Watch is not served' });
    },
  };
}

/** Where to listen: `--listen X` or `--listen=X`, else $FLIPFLOP_LISTEN, else the default. */
function endpointFromArgs(argv) {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--listen' && i + 1 < argv.length) return argv[i + 1];
    if (argv[i].startsWith('--listen=')) return argv[i].slice('--listen='.length);
  }
  return process.env.FLIPFLOP_LISTEN || DEFAULT_ENDPOINT;
}

/** Remove a socket file a previous run left behind (never anything that is not a socket). */
function clearStaleSocket(endpoint) {
  if (!endpoint.startsWith('unix:')) return;
  const file = endpoint.slice('unix:'.length).replace(/^\/\//, '');
  try {
    if (fs.lstatSync(file).isSocket()) fs.unlinkSync(file);
  } catch (e) {
    if (e.code !== 'ENOENT') throw e;
  }
}

/**
 * Serve the bot that `makeBot()` makes (one per match) until SIGTERM or SIGINT.
 *
 * The seat token: the arena starts the bot with a secret in FLIPFLOP_SEAT_TOKEN and refuses a
 * handshake that does not send it back. It is read once, here, and removed from the
 * environment so that child processes and logs never see it. Started by hand, without it,
 * the handshake carries none.
 */
function serve(makeBot) {
  const seatToken = process.env.FLIPFLOP_SEAT_TOKEN || '';
  delete process.env.FLIPFLOP_SEAT_TOKEN;
  const endpoint = endpointFromArgs(process.argv.slice(2));
  const state = { serving: true };
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  });
  const identity = makeBot();
  server.addService(BotService, botService(makeBot, identity, seatToken));
  server.addService(HealthService, healthService(state));
  clearStaleSocket(endpoint);
  server.bindAsync(endpoint, grpc.ServerCredentials.createInsecure(), (error) => {
    if (error) {
      console.error(`cannot listen on ${endpoint}: ${error.message}`);
      process.exit(1);
    }
    // Serving starts once bound (grpc-js 1.10 and later need no server.start()).
    console.log(`serving ${identity.name} on ${endpoint}`);
  });
  const stop = (signal) => {
    console.error(`received ${signal}, shutting down`);
    state.serving = false;
    // Calls in flight get two seconds, then the server is stopped anyway.
    const timer = setTimeout(() => server.forceShutdown(), 2000);
    server.tryShutdown(() => {
      clearTimeout(timer);
      clearStaleSocket(endpoint);
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

module.exports = { serve, PROTOCOL_VERSION };
