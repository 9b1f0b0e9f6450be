const assert = require("assert");
const { capitalize } = require("./text.js");
assert.strictEqual(capitalize("hello"), "Hello");
console.log("ok");
