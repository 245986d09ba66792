package fit

import "testing"

func TestPosition(t *testing.T) {
	for _, c := range []struct {
		i, n int
		want string
	}{{0, 0, "0/0"}, {0, 1, "1/1"}, {119, 10000, "120/10,000"}, {999999, 1234567, "1,000,000/1,234,567"}, {-3, 5, "1/5"}, {9, 5, "5/5"}} {
		if got := Position(c.i, c.n); got != c.want {
			t.Errorf("Position(%d, %d) = %q, want %q", c.i, c.n, got, c.want)
		}
	}
}

func TestSpread(t *testing.T) {
	if got := Spread("Runs 6", "3/6", 12); got != "Runs 6   3/6" {
		t.Errorf("%q", got)
	}
	if got := Spread("Runs 6", "3/6", 8); got != "Runs 6  " {
		t.Errorf("a right part that does not fit is dropped: %q", got)
	}
}
