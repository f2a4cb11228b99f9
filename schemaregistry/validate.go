package schemaregistry

import (
	"context"
	"encoding/binary"
	"fmt"
)

// ValidateValue checks a record value of topic for the broker's per-topic
// schema enforcement: Confluent wire format (magic 0, 4-byte schema id, Avro
// binary), an id registered (not deleted) under <topic>-value, and a payload
// that decodes with that schema to the last byte, within the bounded
// decoder's limits (see checkBinary). The subject's versions and
// the parsed schema come from the caches, so a produce costs no store read
// once both are warm.
func (r *Registry) ValidateValue(ctx context.Context, topic string, value []byte) error {
	if len(value) < 5 || value[0] != 0 {
		return fmt.Errorf("the value is not in the schema registry wire format (magic byte 0 and a 4-byte schema id)")
	}
	id := int(binary.BigEndian.Uint32(value[1:5]))
	subject := topic + "-value"
	if err := r.checkIDInSubject(ctx, subject, id); err != nil {
		return err
	}
	parsed, err := r.ParsedByID(ctx, id)
	if err != nil {
		return fmt.Errorf("schema id %d: %v", id, err)
	}
	if _, err := parsed.DecodeBinary(value[5:]); err != nil {
		return fmt.Errorf("the value does not decode with schema id %d: %v", id, err)
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
