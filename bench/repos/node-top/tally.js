#!/usr/bin/env node
// Usage: node tally.js FILE
//
// Counts the words of FILE (runs of the letters a-z after lowercasing) and prints one line per
// distinct word, "<count> <word>", most frequent first, ties in alphabetical order.
'use strict';

const fs = require('fs');

function tally(text) {
  const counts = new Map();
  for (const word of text.toLowerCase().match(/[a-z]+/g) || []) {
    counts.set(word, (counts.get(word) || 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

function main(argv) {
  if (argv.length !== 1) {
    process.stderr.write('usage: node tally.js FILE\n');
    return 2;
  }
  const lines = tally(fs.readFileSync(argv[0], 'utf8')).map(([word, n]) => `${n} ${word}\n`);
  process.stdout.write(lines.join(''));
  return 0;
}

process.exitCode = main(process.argv.slice(2));
