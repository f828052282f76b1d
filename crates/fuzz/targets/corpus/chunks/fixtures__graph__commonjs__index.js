const create = require('./create');
const { parseHeader } = require('./parse');

module.exports = { create, parseHeader };

create();
