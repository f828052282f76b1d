'use strict';

const fs = require('fs');
const { join } = require('path');
require('dotenv/config');

const DEFAULT_NAME = 'config.json';

function readConfig(dir) {
  return JSON.parse(fs.readFileSync(join(dir, DEFAULT_NAME), 'utf8'));
}

exports.VERSION = '1.0.0';

exports.load = function load(dir) {
  return readConfig(dir);
};

module.exports.save = (dir, data) => {
  fs.writeFileSync(join(dir, DEFAULT_NAME), JSON.stringify(data));
};

module.exports = {
  readConfig,
  reset() {
    fs.rmSync(DEFAULT_NAME);
  },
  validate: function (config) {
    return typeof config === 'object';
  },
};
