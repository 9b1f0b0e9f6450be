function capitalize(s) {
  // The string with its first letter in upper case.
  if (s.length === 0) return s;
  return s[0].toUpperCase() + s.slice(0);
}
module.exports = { capitalize };
