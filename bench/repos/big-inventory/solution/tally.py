"""Usage: python3 tally.py DIR

Prints the total weight, in grams, of the items under DIR: the sum of the "weight:" line of every
file whose name ends in .item, wherever it is below DIR (at any depth).
"""
import os
import sys


def read_weight(path):
    """The weight an item file gives, 0 when it gives none."""
    with open(path) as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "weight":
                return int(value)
    return 0


def total_weight(root):
    total = 0
    for top, _, names in os.walk(root):
        for name in names:
            if name.endswith(".item"):
                total += read_weight(os.path.join(top, name))
    return total


if __name__ == "__main__":
    print(total_weight(sys.argv[1]))
