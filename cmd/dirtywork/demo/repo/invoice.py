"""Invoice totals for a small shop."""


def subtotal(lines):
    """Sum of quantity × unit price over the invoice lines."""
    return sum(qty * price for qty, price in lines)


def total(lines, tax_rate):
    """Subtotal plus tax, rounded to cents."""
    return round(subtotal(lines) * tax_rate, 2)
