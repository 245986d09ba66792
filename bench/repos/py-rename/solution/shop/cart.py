"""A shopping cart."""
from shop.pricing import order_total


class Cart:
    """Lines of (unit_cents, quantity); total() prices them with order_total."""

    def __init__(self):
        self.lines = []

    def add(self, unit_cents, quantity=1):
        self.lines.append((unit_cents, quantity))

    def total(self, discount_pct=0):
        return order_total(self.lines, discount_pct)
