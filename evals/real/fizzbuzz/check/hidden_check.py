from fizz import fizzbuzz

want = {1: "1", 3: "Fizz", 5: "Buzz", 9: "Fizz", 10: "Buzz", 15: "FizzBuzz", 30: "FizzBuzz", 7: "7"}
for n, w in want.items():
    assert fizzbuzz(n) == w, (n, fizzbuzz(n))
print("hidden check: ok")
