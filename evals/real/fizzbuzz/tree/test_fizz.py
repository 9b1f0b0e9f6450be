from fizz import fizzbuzz

assert fizzbuzz(3) == "Fizz"
assert fizzbuzz(15) == "FizzBuzz"
print("ok")
