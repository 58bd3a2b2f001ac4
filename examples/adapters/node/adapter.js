#!/usr/bin/env node
// A minimal ppcheck adapter in plain Node.js (no packages), written from docs/conformance.md.
//
// It implements one suite, parley.canonical (Parley SPEC section 10: keys sorted by code
// point, no whitespace, only safe integers, no lone surrogates), and answers
// {"unsupported": true} to every other suite. Run it with:
//
//     ppcheck --impl 'node examples/adapters/node/adapter.js'
"use strict";

const readline = require("node:readline");

class CanonicalError extends Error {
  constructor(reason, message) {
    super(message);
    this.code = "invalid_params";
    this.reason = reason;
  }
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

// Compare two strings by Unicode code point (JavaScript's default sort uses UTF-16 units).
function byCodePoint(a, b) {
  const x = Array.from(a, (c) => c.codePointAt(0));
  const y = Array.from(b, (c) => c.codePointAt(0));
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i] - y[i];
  }
  return x.length - y.length;
}

function str(s) {
  if (LONE_SURROGATE.test(s)) throw new CanonicalError("not_canonical", "lone surrogate");
  return JSON.stringify(s);
}

function canonical(value) {
  if (value === null || value === true || value === false) return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isInteger(value)) throw new CanonicalError("not_integer", "not an integer");
    if (!Number.isSafeInteger(value)) throw new CanonicalError("unsafe_integer", "beyond 2^53-1");
    return JSON.stringify(value);
  }
  if (typeof value === "string") return str(value);
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  const keys = Object.keys(value).sort(byCodePoint);
  return "{" + keys.map((k) => str(k) + ":" + canonical(value[k])).join(",") + "}";
}

const SUITES = {
  "parley.canonical": (input) => ({ canonical: canonical(input.value) }),
};

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on("line", (line) => {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch (err) {
    process.stderr.write(`adapter: malformed request line: ${err.message}\n`);
    process.exit(2);
  }
  const operation = SUITES[request.suite];
  let answer;
  if (operation === undefined) {
    answer = { id: request.id, unsupported: true };
  } else {
    try {
      answer = { id: request.id, output: operation(request.input) };
    } catch (err) {
      if (!(err instanceof CanonicalError)) throw err;
      answer = { id: request.id, error: { code: err.code, reason: err.reason } };
    }
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
