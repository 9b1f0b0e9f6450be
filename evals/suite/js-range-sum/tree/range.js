function sumRange(a, b) {
  // a + (a + 1) + ... + b
  let total = 0;
  for (let i = a; i < b; i++) total += i;
  return total;
}
module.exports = { sumRange };
