'use strict';

const fs = require('fs');
const path = require('path');
const { promisify } = require('util');

const readFile = promisify(fs.readFile);
const ENCODING = 'utf8';

async function readJson(file) {
  return JSON.parse(await readFile(path.resolve(file), ENCODING));
}

function exists(file) {
  return fs.existsSync(file);
}

module.exports = { readJson, exists };
