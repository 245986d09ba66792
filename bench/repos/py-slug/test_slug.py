"""What slugify must do. Run with: python3 -m unittest test_slug"""
import unittest

from slug import slugify


class SlugifyTest(unittest.TestCase):
    def test_words_are_joined_by_dashes(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_digits_stay(self):
        self.assertEqual(slugify("Top 10 Tips"), "top-10-tips")

    def test_any_run_of_other_characters_is_one_dash(self):
        self.assertEqual(slugify("a  &  b"), "a-b")
        self.assertEqual(slugify("C++ / Rust: Notes"), "c-rust-notes")

    def test_apostrophes_vanish(self):
        self.assertEqual(slugify("Don't Stop"), "dont-stop")
        self.assertEqual(slugify("rock'n'roll"), "rocknroll")
        self.assertEqual(slugify("It's -- great"), "its-great")
        self.assertEqual(slugify("a ' b"), "a-b")

    def test_no_dash_at_either_end(self):
        self.assertEqual(slugify("  --Hello, World!--  "), "hello-world")
        self.assertEqual(slugify("'quoted'"), "quoted")

    def test_nothing_left_is_untitled(self):
        self.assertEqual(slugify(""), "untitled")
        self.assertEqual(slugify("!!!"), "untitled")
        self.assertEqual(slugify("' - '"), "untitled")


if __name__ == "__main__":
    unittest.main()
