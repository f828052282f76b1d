'use strict';

/** Splits a header value on commas. */
exports.splitHeader = function splitHeader(value) {
  return value.split(',').map(trim);
};

module.exports.parseHeader = (value) => exports.splitHeader(value);

function trim(s) {
  return s.trim();
}

exports.trim = trim;

exports.LIMIT = 1024;
