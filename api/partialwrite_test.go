package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ferry-mq/ferry/server"
)

func partialOf(t *testing.T) ([]server.RecordOffset, *server.PartialWriteError) {
	t.Helper()
	offsets := []server.RecordOffset{{Partition: 0, Offset: 4}, {Partition: 1, Offset: -1}, {Partition: 0, Offset: 5}}
	partial := &server.PartialWriteError{Topic: "t", Written: 2, Failures: []server.PartitionFailure{
		{Partition: 1, Records: 1, Err: fmt.Errorf("%w: t-1 has no leader", server.ErrLeaderNotAvailable)}}}
	return offsets, partial
}

// POST /kafka/{t} when some partitions were written: the failure's status
// and code with Retry-After, and every record's offset or its error.
func TestPartialWriteAnswer(t *testing.T) {
	offsets, partial := partialOf(t)
	w := httptest.NewRecorder()
	writePartialWrite(w, offsets, partial)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("status %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	var body partialWriteBody
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.ErrorCode != codeNoLeader || len(body.Offsets) != 3 {
		t.Fatalf("body %s", w.Body)
	}
	if o := body.Offsets; o[0].Offset != 4 || o[0].ErrorCode != 0 || o[2].Offset != 5 ||
		o[1].Offset != -1 || o[1].ErrorCode != codeNoLeader || o[1].Error == "" {
		t.Fatalf("offsets %+v", o)
	}
}

// REST Proxy v2: 200, the failed records with REST Proxy's retriable code.
func TestPartialWriteRestProxyOffsets(t *testing.T) {
	offsets, partial := partialOf(t)
	got := restProxyOffsets(offsets, partial)
	if got[0].ErrorCode != nil || got[2].ErrorCode != nil || got[1].ErrorCode == nil || *got[1].ErrorCode != restProxyRetriable || got[1].Error == nil {
		t.Fatalf("offsets %+v", got)
	}
	partial.Failures[0].Err = fmt.Errorf("%w: too big", server.ErrRecordTooLarge)
	if got := restProxyOffsets(offsets, partial); *got[1].ErrorCode != restProxyNonRetriable {
		t.Fatalf("a record too large: code %d, want non-retriable", *got[1].ErrorCode)
	}
	if got := restProxyOffsets(offsets[:1], nil); got[0].ErrorCode != nil || got[0].Offset != 4 {
		t.Fatalf("a full write: %+v", got)
	}
}
