package schemaregistry

import (
	"context"
	"fmt"
)

// pinger is a store that can check its connection cheaply.
type pinger interface {
	Ping(ctx context.Context) error
}

// Ping reports whether the store answers (for GET /readyz): PostgreSQL is
// pinged; a store without Ping lists its subjects.
func (r *Registry) Ping(ctx context.Context) error {
	if p, ok := r.store.(pinger); ok {
		return p.Ping(ctx)
	}
	if _, err := r.store.Subjects(ctx); err != nil {
		return fmt.Errorf("schema store: %w", err)
	}
	return nil
}

// LiveVersions counts the live subject versions, the registered schemas
// that ferry_schema_registry_schemas reports.
func (r *Registry) LiveVersions(ctx context.Context) (int, error) {
	subjects, err := r.store.Subjects(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range subjects {
		n += s.Live
	}
	return n, nil
}

// Ping acquires a pooled connection and round-trips to the server.
func (s *PostgresStore) Ping(ctx context.Context) error {
	ctx, cancel := s.ctx(ctx)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}
