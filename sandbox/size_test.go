package sandbox

import "testing"

func TestParseSize(t *testing.T) {
	const (
		k = int64(1) << 10
		m = k << 10
		g = m << 10
	)
	for _, tc := range []struct {
		in   string
		want int64 // 0: refused
	}{
		{"512m", 512 * m},
		{"4g", 4 * g},
		{"4G", 4 * g},
		{"4gb", 4 * g},
		{"4GB", 4 * g},
		{"4GiB", 4 * g},
		{"1.5g", 3 * g / 2},
		{"2048k", 2 * m},
		{"100b", 100},
		{"100", 100},
		{"1t", 1024 * g},
		{"", 0},
		{"0", 0},
		{"0.0001b", 0},
		{"-1g", 0},
		{"g", 0},
		{"4x", 0},
		{"1.5.2g", 0},
		{"4 gigabytes", 0},
	} {
		got, err := ParseSize(tc.in)
		switch {
		case tc.want == 0 && err == nil:
			t.Errorf("ParseSize(%q) = %d, want a refusal", tc.in, got)
		case tc.want != 0 && (err != nil || got != tc.want):
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
