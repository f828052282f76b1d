const parse = require('./parse');
const Router = require('./router');
const trimmed = require('./parse').trim;

function create() {
  const router = new Router();
  parse.parseHeader('a, b');
  return trimmed(router);
}

module.exports = create;
