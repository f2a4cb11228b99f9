package main

import (
	"testing"
	"time"
)

// The fetch session settings reach the Kafka listener's config, by flag
// and by Kafka's property names; 0 slots turns sessions off (the
// listener's own 0 would be its default).
func TestFetchSessionSettings(t *testing.T) {
	for _, c := range []struct {
		args  []string
		slots int
		age   time.Duration
	}{
		{nil, 1000, 120 * time.Second},
		{[]string{"--max-incremental-fetch-session-cache-slots", "5", "--min-incremental-fetch-session-eviction-ms", "2500"}, 5, 2500 * time.Millisecond},
		{[]string{"--max-incremental-fetch-session-cache-slots", "0"}, -1, 120 * time.Second},
	} {
		s, _, err := loadServeSettings(c.args)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if s.kafkaLimits.FetchSessionCacheSlots != c.slots || s.kafkaLimits.FetchSessionEvictionAge != c.age {
			t.Errorf("%v: slots %d age %v, want %d %v", c.args, s.kafkaLimits.FetchSessionCacheSlots, s.kafkaLimits.FetchSessionEvictionAge, c.slots, c.age)
		}
	}
	for _, bad := range [][]string{
		{"--min-incremental-fetch-session-eviction-ms", "soon"},
		{"--min-incremental-fetch-session-eviction-ms", "-5"},
		{"--max-incremental-fetch-session-cache-slots", "many"},
	} {
		if _, _, err := loadServeSettings(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
