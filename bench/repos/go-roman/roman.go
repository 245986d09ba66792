// Package roman writes numbers in Roman numerals.
package roman

import "strings"

// ToRoman returns n in Roman numerals, in the standard subtractive form (4 is IV, 9 is IX, 40 is
// XL, 90 is XC, 400 is CD, 900 is CM), or "" when n is not between 1 and 3999.
func ToRoman(n int) string {
	if n < 1 || n > 3999 {
		return ""
	}
	values := []int{1000, 500, 100, 50, 10, 5, 1}
	symbols := []string{"M", "D", "C", "L", "X", "V", "I"}
	var b strings.Builder
	for i, v := range values {
		for n >= v {
			b.WriteString(symbols[i])
			n -= v
		}
	}
	return b.String()
}
