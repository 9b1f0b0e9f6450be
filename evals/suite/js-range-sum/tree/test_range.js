const assert = require("assert");
const { sumRange } = require("./range.js");
assert.strictEqual(sumRange(1, 4), 10);
console.log("ok");
