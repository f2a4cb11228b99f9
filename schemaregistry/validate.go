package schemaregistry

import (
	"context"
	"encoding/binary"
	"fmt"
)

// ValidateValue checks a record value of topic for the broker's per-topic
// schema enforcement: Confluent wire format (magic 0, 4-byte schema id,
// then the payload of the schema's type), an id registered (not deleted)
// under <topic>-value, and a payload that decodes with that schema to the
// last byte, within the type's bounds (Avro: checkBinary; JSON Schema:
// size and depth before validation). The subject's versions and the
// parsed schema come from the caches, so a produce costs no store read
// once both are warm.
func (r *Registry) ValidateValue(ctx context.Context, topic string, value []byte) error {
	return r.validateFramed(ctx, topic+"-value", "value", value)
}

// ValidateKey is ValidateValue for record keys, under <topic>-key.
func (r *Registry) ValidateKey(ctx context.Context, topic string, key []byte) error {
	return r.validateFramed(ctx, topic+"-key", "key", key)
}

func (r *Registry) validateFramed(ctx context.Context, subject, what string, framed []byte) error {
	if len(framed) < 5 || framed[0] != 0 {
		return fmt.Errorf("the %s is not in the schema registry wire format (magic byte 0 and a 4-byte schema id)", what)
	}
	id := int(binary.BigEndian.Uint32(framed[1:5]))
	if err := r.checkIDInSubject(ctx, subject, id); err != nil {
		return err
	}
	parsed, err := r.ParsedSchemaByID(ctx, id)
	if err != nil {
		return fmt.Errorf("schema id %d: %v", id, err)
	}
	if err := parsed.ValidatePayload(framed[5:]); err != nil {
		return fmt.Errorf("the %s does not decode with %s schema id %d: %v", what, parsed.Type(), id, err)
	}
	return nil
}

// checkIDInSubject looks in the cached versions first and reloads once, so
// a schema another node just registered is accepted.
func (r *Registry) checkIDInSubject(ctx context.Context, subject string, id int) error {
	for _, fresh := range []bool{false, true} {
		vs, err := r.versions(ctx, subject, fresh)
		if err != nil {
			return err
		}
		for _, v := range vs {
			if v.ID == id && !v.Deleted {
				return nil
			}
		}
	}
	return fmt.Errorf("schema id %d is not a registered version of subject %s", id, subject)
}
