from pager import pages

assert pages(11, 5) == 3
print("ok")
