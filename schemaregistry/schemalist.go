package schemaregistry

import (
	"context"
	"strings"
)

// ListSchemasOptions narrows GET /schemas.
type ListSchemasOptions struct {
	SubjectPrefix string
	Deleted       bool // soft-deleted versions too
	LatestOnly    bool // each subject's latest version only
}

// ListSchemas lists registered versions with their schemas, by subject
// then version, as Confluent's GET /schemas does.
func (r *Registry) ListSchemas(ctx context.Context, opt ListSchemasOptions) ([]SchemaInfo, error) {
	subjects, err := r.Subjects(ctx, opt.Deleted)
	if err != nil {
		return nil, err
	}
	out := []SchemaInfo{}
	for _, s := range subjects {
		if !strings.HasPrefix(s, opt.SubjectPrefix) {
			continue
		}
		vs, err := r.versions(ctx, s, false)
		if err != nil {
			return nil, err
		}
		if !opt.Deleted {
			vs = live(vs)
		}
		if opt.LatestOnly && len(vs) > 0 {
			vs = vs[len(vs)-1:]
		}
		for _, v := range vs {
			info, err := r.info(ctx, v)
			if err != nil {
				return nil, err
			}
			out = append(out, info)
		}
	}
	return out, nil
}
