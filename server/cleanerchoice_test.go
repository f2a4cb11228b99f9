package server

import (
	"testing"
	"time"

	"github.com/ferry-mq/ferry/storage"
)

func TestChooseDirtiest(t *testing.T) {
	now := time.UnixMilli(10_000_000)
	on := storage.Compaction{Enabled: true, MinCleanableRatio: 0.5}
	lagged := on
	lagged.MaxLag = time.Minute
	st := func(clean, dirty, oldest int64) storage.CleanerState {
		return storage.CleanerState{CleanBytes: clean, DirtyBytes: dirty, OldestDirtyTime: oldest}
	}
	tests := []struct {
		name  string
		cands []cleanCandidate
		want  int
	}{
		{"none", nil, -1},
		{"below the ratio", []cleanCandidate{{state: st(60, 40, 0), cfg: on}}, -1},
		{"at the ratio is not above it", []cleanCandidate{{state: st(50, 50, 0), cfg: on}}, -1},
		{"above the ratio", []cleanCandidate{{state: st(40, 60, 0), cfg: on}}, 0},
		{"dirtiest wins", []cleanCandidate{{state: st(40, 60, 0), cfg: on}, {state: st(10, 90, 0), cfg: on}}, 1},
		{"busy skipped", []cleanCandidate{{state: st(40, 60, 0), cfg: on}, {state: st(10, 90, 0), cfg: on, busy: true}}, 0},
		{"not compacted", []cleanCandidate{{state: st(0, 90, 0), cfg: storage.Compaction{MinCleanableRatio: 0.5}}}, -1},
		{"nothing dirty", []cleanCandidate{{state: st(100, 0, 0), cfg: on}}, -1},
		{"max lag forces a clean log", []cleanCandidate{{state: st(90, 10, now.UnixMilli()-2*60_000), cfg: lagged}}, 0},
		{"max lag not yet passed", []cleanCandidate{{state: st(90, 10, now.UnixMilli()-30_000), cfg: lagged}}, -1},
		{"max lag with unknown time", []cleanCandidate{{state: st(90, 10, -1), cfg: lagged}}, -1},
		{"forced still ranks by ratio", []cleanCandidate{
			{state: st(90, 10, 0), cfg: lagged},
			{state: st(30, 70, now.UnixMilli()), cfg: on},
		}, 1},
	}
	for _, tc := range tests {
		if got := chooseDirtiest(tc.cands, now); got != tc.want {
			t.Errorf("%s: chose %d, want %d", tc.name, got, tc.want)
		}
	}
}
