package main

import (
	"math"
	"testing"
)

func TestSummarize(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		in   []float64
		want summary
	}{
		{"one", []float64{5}, summary{1, 5, 5, 5}},
		{"odd", []float64{9, 1, 5}, summary{3, 5, 1, 9}},
		{"even", []float64{4, 1, 3, 10}, summary{4, 3.5, 1, 10}},
		{"nan ignored", []float64{nan, 2, 4}, summary{2, 3, 2, 4}},
		{"duplicates", []float64{7, 7, 7, 1}, summary{4, 7, 1, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := summarize(tt.in); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	for _, in := range [][]float64{nil, {nan}} {
		if got := summarize(in); got.N != 0 || !math.IsNaN(got.Median) || !math.IsNaN(got.Min) || !math.IsNaN(got.Max) {
			t.Errorf("summarize(%v) = %+v, want N=0 and NaNs", in, got)
		}
	}
	in := []float64{3, 1, 2}
	summarize(in)
	if in[0] != 3 {
		t.Error("summarize reordered its input")
	}
}

func TestRatio(t *testing.T) {
	if got := ratio(3, 2); got != 1.5 {
		t.Errorf("ratio(3,2) = %v", got)
	}
	for _, c := range [][2]float64{{1, 0}, {math.NaN(), 1}, {1, math.NaN()}} {
		if got := ratio(c[0], c[1]); !math.IsNaN(got) {
			t.Errorf("ratio(%v, %v) = %v, want NaN", c[0], c[1], got)
		}
	}
}

func TestRotate(t *testing.T) {
	xs := []string{"a", "b", "c"}
	for k, want := range []string{"abc", "bca", "cab", "abc"} {
		got := ""
		for _, x := range rotate(xs, k) {
			got += x
		}
		if got != want {
			t.Errorf("rotate(%d) = %s, want %s", k, got, want)
		}
	}
	if rotate([]int{}, 3) != nil {
		t.Error("rotate of empty")
	}
}
