"""Prices of orders, in whole cents."""


def calc_total(lines, discount_pct=0):
    """The total of lines [(unit_cents, quantity), ...] less discount_pct percent, rounded down.

    calc_total([(250, 2), (100, 1)], 10) == 540
    """
    if not 0 <= discount_pct <= 100:
        raise ValueError("discount_pct must be between 0 and 100")
    gross = sum(unit * qty for unit, qty in lines)
    return gross * (100 - discount_pct) // 100
