#!/usr/bin/env node
// Usage: node tally.js [--top N] FILE
//
// Counts the words of FILE (runs of the letters a-z after lowercasing) and prints one line per
// distinct word, "<count> <word>", most frequent first, ties in alphabetical order. With --top N
// (N a positive whole number, before or after FILE) only the first N lines are printed.
'use strict';

const fs = require('fs');

function tally(text) {
  const counts = new Map();
  for (const word of text.toLowerCase().match(/[a-z]+/g) || []) {
    counts.set(word, (counts.get(word) || 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

function parse(argv) {
  let top = Infinity;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--top') {
      const n = argv[++i];
      if (n === undefined || !/^[0-9]+$/.test(n) || Number(n) < 1) return null;
      top = Number(n);
    } else {
      files.push(argv[i]);
    }
  }
  return files.length === 1 ? { top, file: files[0] } : null;
}

function main(argv) {
  const args = parse(argv);
  if (args === null) {
    process.stderr.write('usage: node tally.js [--top N] FILE\n');
    return 2;
  }
  const lines = tally(fs.readFileSync(args.file, 'utf8'))
    .slice(0, args.top)
    .map(([word, n]) => `${n} ${word}\n`);
  process.stdout.write(lines.join(''));
  return 0;
}

process.exitCode = main(process.argv.slice(2));
