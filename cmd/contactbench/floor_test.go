package main

import (
	"math"
	"testing"
)

func TestRequestCeiling(t *testing.T) {
	for _, c := range []struct {
		rps        float64
		cores      int
		deliveryMs float64
		want       float64
	}{
		{rps: 8000, cores: 2, deliveryMs: 0, want: 1},        // a request alone: the baseline's rate
		{rps: 8000, cores: 2, deliveryMs: 0.25, want: 0.5},   // 0.25 ms a request, as much again for its delivery
		{rps: 8000, cores: 2, deliveryMs: 0.75, want: 0.25},  // a delivery three times the request
		{rps: 4000, cores: 1, deliveryMs: 0.0625, want: 0.8}, // one core: 0.25 ms a request
		{rps: 0, cores: 2, deliveryMs: 0.25, want: 0},        // no baseline measured
	} {
		if got := requestCeiling(c.rps, c.cores, c.deliveryMs); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("requestCeiling(%v, %d, %v) = %v, want %v", c.rps, c.cores, c.deliveryMs, got, c.want)
		}
	}
}
