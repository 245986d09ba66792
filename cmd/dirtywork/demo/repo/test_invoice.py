import unittest

from invoice import subtotal, total


class InvoiceTest(unittest.TestCase):
    def test_subtotal(self):
        self.assertEqual(subtotal([(2, 1.50), (1, 4.00)]), 7.00)


if __name__ == "__main__":
    unittest.main()
