package main

import "testing"

func TestSpreadOf(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want spread
	}{
		{nil, spread{}},
		{[]float64{7}, spread{7, 7, 7}},
		{[]float64{9, 1, 5}, spread{5, 1, 9}},
		{[]float64{4, 1, 3, 2}, spread{2.5, 1, 4}},
	} {
		in := append([]float64(nil), tc.in...)
		if got := spreadOf(tc.in); got != tc.want {
			t.Errorf("spreadOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Errorf("spreadOf reordered its input: %v", tc.in)
			}
		}
	}
}
