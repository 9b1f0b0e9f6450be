const assert = require("assert");
const { capitalize } = require("./text.js");
assert.strictEqual(capitalize(""), "");
assert.strictEqual(capitalize("a"), "A");
assert.strictEqual(capitalize("world peace"), "World peace");
console.log("hidden check: ok");
