package cuda

import (
	"math"
	"testing"
)

func TestChooseThresholds(t *testing.T) {
	m := func(n int, up bool, staged, piped, direct float64) StagingMeasurement {
		return StagingMeasurement{Bytes: n, Upload: up, Staged: staged, Pipelined: piped, Direct: direct}
	}
	tests := []struct {
		name     string
		ms       []StagingMeasurement
		stageMax [2]int
		pipeMin  [2]int
	}{
		{"typical", []StagingMeasurement{
			m(4, true, 2, 0, 1), m(4, false, 2, 0, 1),
			m(8, true, 2, 0, 1), m(8, false, 1, 0, 2), // staging loses downloads at 8
			m(16, true, 2, 0, 3), m(16, false, 2, 0, 3),
			m(32, true, 0, 5, 3), m(32, false, 0, 4, 3),
			m(64, true, 0, 6, 3), m(64, false, 0, 6, 3),
		}, [2]int{8, 4}, [2]int{32, 32}},
		{"the pipeline wins uploads sooner", []StagingMeasurement{
			m(16, true, 0, 4, 3), m(16, false, 0, 2, 3),
			m(32, true, 0, 5, 3), m(32, false, 0, 2, 3),
			m(64, true, 0, 6, 3), m(64, false, 0, 6, 3),
		}, [2]int{0, 0}, [2]int{16, 64}},
		{"staging beats the driver but not the pipeline", []StagingMeasurement{
			m(4, false, 2, 1, 1), m(8, false, 3, 4, 2), m(16, false, 3, 5, 2),
		}, [2]int{0, 4}, [2]int{math.MaxInt, 8}},
		{"staging always loses, pipeline never wins", []StagingMeasurement{
			m(4, true, 1, 1, 2), m(8, true, 1, 1, 2),
		}, [2]int{0, 0}, [2]int{math.MaxInt, math.MaxInt}},
		{"pipeline loses at the largest size", []StagingMeasurement{
			m(4, true, 1, 3, 2), m(8, true, 1, 1, 2),
		}, [2]int{0, 0}, [2]int{math.MaxInt, math.MaxInt}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, p := chooseThresholds(tt.ms)
			if a != tt.stageMax || p != tt.pipeMin {
				t.Errorf("chooseThresholds = %v, %v; want %v, %v", a, p, tt.stageMax, tt.pipeMin)
			}
		})
	}
}
