package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
)

// Open a store on a running PostgreSQL, append a message, read it back.
// (Compiled, not run: it needs a server; the package's tests start one.)
func Example() {
	ctx := context.Background()
	s, err := pgstore.Open(ctx, os.Getenv("CLUTCH_PG_DSN"), &pgstore.Options{Schema: "clutch_example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	m := protocol.NewIDs(nil).NewMessage(protocol.TypeChatMessage, "agent:ken")
	m.To = []protocol.Participant{{AgentID: "agent:ana"}}
	m.Payload = json.RawMessage(`{"text":"hello"}`)
	res, err := s.Append(ctx, m)
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range s.Read(ctx, store.Query{RunID: m.RunID}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(ev.Seq == res[0].Seq, string(ev.Raw) == string(m.Raw()))
	}
}
