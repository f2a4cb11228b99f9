package server

import (
	"context"
	"fmt"

	"github.com/ferry-mq/ferry/server/records"
)

// CfgValueSchemaValidation turns on schema enforcement for a topic's
// values: every produced value, over HTTP or the Kafka protocol, must carry
// a schema id registered under <topic>-value and decode with that schema
// (Avro or JSON Schema, whichever type the id names). Confluent and
// Redpanda check only the id; ferry decodes the payload too.
const CfgValueSchemaValidation = "confluent.value.schema.validation"

// CfgKeySchemaValidation is the same for keys, under <topic>-key.
const CfgKeySchemaValidation = "confluent.key.schema.validation"

// ValueValidator checks one record value of a topic (implemented by the
// schema registry, which the core must not import).
type ValueValidator interface {
	ValidateValue(ctx context.Context, topic string, value []byte) error
}

// KeyValidator checks one record key of a topic; a ValueValidator that is
// also a KeyValidator serves confluent.key.schema.validation.
type KeyValidator interface {
	ValidateKey(ctx context.Context, topic string, key []byte) error
}

// checkValue applies the topic's key and value enforcement to record
// index i. Null keys and values (tombstones) carry no schema and pass.
func (b *Broker) checkValue(ctx context.Context, t *topic, i int, key, value []byte) error {
	if t.settings.validateKeys && key != nil {
		kv, ok := b.cfg.ValueValidator.(KeyValidator)
		if !ok {
			return fmt.Errorf("%w: %s requires schema-valid keys (%s) but no schema registry is configured",
				ErrInvalidRecord, t.meta.Name, CfgKeySchemaValidation)
		}
		if err := kv.ValidateKey(ctx, t.meta.Name, key); err != nil {
			return fmt.Errorf("%w: record %d of %s: %v", ErrInvalidRecord, i, t.meta.Name, err)
		}
	}
	if !t.settings.validateValues || value == nil {
		return nil
	}
	if b.cfg.ValueValidator == nil {
		return fmt.Errorf("%w: %s requires schema-valid values (%s) but no schema registry is configured",
			ErrInvalidRecord, t.meta.Name, CfgValueSchemaValidation)
	}
	if err := b.cfg.ValueValidator.ValidateValue(ctx, t.meta.Name, value); err != nil {
		return fmt.Errorf("%w: record %d of %s: %v", ErrInvalidRecord, i, t.meta.Name, err)
	}
	return nil
}

// checkBatchValues applies checkValue to every record of client batches;
// record indexes count from the first record of the request's batches.
func (b *Broker) checkBatchValues(ctx context.Context, t *topic, batches *records.Produced) error {
	if !t.settings.validateValues && !t.settings.validateKeys {
		return nil
	}
	i, failed := 0, error(nil)
	err := batches.Records(func(r records.Record) bool {
		failed = b.checkValue(ctx, t, i, r.Key, r.Value)
		i++
		return failed == nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorruptMessage, err)
	}
	return failed
}
