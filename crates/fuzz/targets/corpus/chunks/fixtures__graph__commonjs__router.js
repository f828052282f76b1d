const { splitHeader, LIMIT } = require('./parse');

/** A tiny router. */
module.exports = class Router {
  route(header) {
    if (header.length > LIMIT) return [];
    return splitHeader(header);
  }
};
