"""Usage: python3 report.py ORDER.json

Prints the total of an order, {"lines": [{"unit_cents": …, "quantity": …}, …], "discount_pct": …},
as calc_total computes it: "total: <cents>".
"""
import json
import sys

from shop.cart import Cart


def main(path):
    with open(path) as f:
        order = json.load(f)
    cart = Cart()
    for line in order["lines"]:
        cart.add(line["unit_cents"], line["quantity"])
    print(f"total: {cart.total(order.get('discount_pct', 0))}")


if __name__ == "__main__":
    main(sys.argv[1])
