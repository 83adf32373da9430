package crewai_test

import (
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/crewai"
	"github.com/clutchprotocol/clutch/protocol"
)

var invalid = []adaptertest.Case{
	{Name: "not crewAI", Raw: []byte(`{"hello":"world"}`), Code: protocol.CodeInvalidField},
	{Name: "event without id", Raw: []byte(`{"events":[{"timestamp":"2025-10-08T18:18:11Z","type":"task_started","event_data":{}}]}`), Code: protocol.CodeMissingField},
	{Name: "event without type", Raw: []byte(`{"events":[{"event_id":"e1","timestamp":"2025-10-08T18:18:11Z","event_data":{}}]}`), Code: protocol.CodeMissingField},
	{Name: "bad timestamp", Raw: []byte(`{"events":[{"event_id":"e1","timestamp":"yesterday","type":"task_started","event_data":{}}]}`), Code: protocol.CodeInvalidField},
	{Name: "data not an object", Raw: []byte(`{"events":[{"id":"e1","execution_id":"x","timestamp":"2025-10-08T18:18:11Z","type":"task_started","data":[1]}]}`), Code: protocol.CodeWrongType},
	{Name: "empty batch", Raw: []byte(`{"events":[]}`), Code: protocol.CodeMissingField},
	{Name: "status without kickoff id", Raw: []byte(`{"status":"running"}`), Code: protocol.CodeMissingField},
	{Name: "inputs not an object", Raw: []byte(`{"inputs":"x"}`), Code: protocol.CodeWrongType},
	{Name: "resume without is_approve", Raw: []byte(`{"execution_id":"a","task_id":"b","human_feedback":"c"}`), Code: protocol.CodeMissingField},
	{Name: "finalize without trace id", Raw: []byte(`{"status":"completed","duration_ms":1,"final_event_count":8}`), Code: protocol.CodeMissingField},
}

func TestContract(t *testing.T) {
	adaptertest.Run(t, crewai.New(nil), &adaptertest.Options{
		Valid:       contractFixtures(t),
		Invalid:     invalid,
		NoRoundTrip: true,
		MaxCuts:     256,
	})
}
