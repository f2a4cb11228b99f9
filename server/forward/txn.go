package forward

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request sends req to broker id and returns its answer: the transaction
// coordinator's WriteTxnMarkers to partition leaders and a leader's
// KIP-890 AddPartitionsToTxn (verifyOnly) to a coordinator
// (txn.PeerRequester). Like Fetch it goes to that broker by id, through
// the guard that cuts connections to brokers the controller declared
// dead, on the inter-broker listener's SASL/TLS settings.
func (f *Forwarder) Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	if err := f.learn(ctx, id); err != nil {
		return nil, err
	}
	resp, err := f.cl.Broker(int(id)).Request(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("broker %d: %w", id, err)
	}
	return resp, nil
}
