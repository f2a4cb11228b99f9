package quota

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Entity types as Kafka's DescribeClientQuotas and AlterClientQuotas
// name them.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"
)

// DefaultName is how ZooKeeper and the CLI spell the default entity.
const DefaultName = "<default>"

// Name is one component of an entity: absent, a given name, or the
// default.
type Name struct {
	Set     bool // the entity has this component
	Default bool // the component is <default>
	Value   string
}

// Named is a component with a given name; Default is the default one.
func Named(v string) Name { return Name{Set: true, Value: v} }

// DefaultComponent is the <default> component.
var DefaultComponent = Name{Set: true, Default: true}

func (n Name) path() string {
	if n.Default {
		return DefaultName
	}
	return n.Value
}

// Entity is what a quota is set for: a user, a client id, or both.
type Entity struct {
	User, Client Name
}

// ErrInvalidEntity is an entity Kafka would refuse (INVALID_REQUEST).
var ErrInvalidEntity = errors.New("invalid quota entity")

// Validate checks the entity has a component and its names can be
// znodes.
func (e Entity) Validate() error {
	if !e.User.Set && !e.Client.Set {
		return fmt.Errorf("%w: neither a user nor a client id", ErrInvalidEntity)
	}
	for _, n := range []Name{e.User, e.Client} {
		if n.Set && !n.Default {
			if err := checkName(n.Value); err != nil {
				return fmt.Errorf("%w: %v", ErrInvalidEntity, err)
			}
		}
	}
	return nil
}

// checkName keeps a name to what can be a znode below /config: names are
// stored as given (as ferry's SCRAM users are), so '/' and the names "."
// and ".." are refused, and so is the literal <default>.
func checkName(v string) error {
	switch {
	case v == "":
		return errors.New("empty name (the default entity is given as null, or --entity-default)")
	case len(v) > 255:
		return fmt.Errorf("name of %d bytes: at most 255", len(v))
	case !utf8.ValidString(v):
		return errors.New("name is not UTF-8")
	case v == "." || v == "..":
		return fmt.Errorf("name %q cannot be a znode", v)
	case v == DefaultName:
		return fmt.Errorf("name %q is the default entity's; give the default as null", v)
	}
	for _, r := range v {
		if r == '/' || r < 0x20 || r == 0x7f {
			return fmt.Errorf("name %q holds '/' or a control character", v)
		}
	}
	return nil
}

// Path is the entity's path below /config, as Kafka writes it in
// ZooKeeper and in change notifications: users/<u>, clients/<c>,
// users/<u>/clients/<c>.
func (e Entity) Path() string {
	switch {
	case e.User.Set && e.Client.Set:
		return "users/" + e.User.path() + "/clients/" + e.Client.path()
	case e.User.Set:
		return "users/" + e.User.path()
	default:
		return "clients/" + e.Client.path()
	}
}

// String is the entity as kafka-configs.sh prints it.
func (e Entity) String() string {
	var parts []string
	if e.User.Set {
		parts = append(parts, "user-principal '"+e.User.path()+"'")
	}
	if e.Client.Set {
		parts = append(parts, "client-id '"+e.Client.path()+"'")
	}
	return strings.Join(parts, ", ")
}

// ParsePath reads an entity path (the inverse of Path).
func ParsePath(p string) (Entity, error) {
	name := func(v string) Name {
		if v == DefaultName {
			return DefaultComponent
		}
		return Named(v)
	}
	var e Entity
	parts := strings.Split(p, "/")
	switch {
	case len(parts) == 2 && parts[0] == "users":
		e.User = name(parts[1])
	case len(parts) == 2 && parts[0] == "clients":
		e.Client = name(parts[1])
	case len(parts) == 4 && parts[0] == "users" && parts[2] == "clients":
		e.User, e.Client = name(parts[1]), name(parts[3])
	default:
		return Entity{}, fmt.Errorf("%w: path %q", ErrInvalidEntity, p)
	}
	return e, e.Validate()
}

// Quota types (Kafka's dynamic user and client configs).
const (
	ProducerByteRate  = "producer_byte_rate"
	ConsumerByteRate  = "consumer_byte_rate"
	RequestPercentage = "request_percentage"
)

// IsQuotaKey reports whether key is a client quota (the other keys of
// /config/users/<u> are SCRAM credentials, which quotas leave alone).
func IsQuotaKey(key string) bool {
	switch key {
	case ProducerByteRate, ConsumerByteRate, RequestPercentage:
		return true
	}
	return false
}

// ErrInvalidQuota is a quota key or value Kafka would refuse
// (INVALID_REQUEST).
var ErrInvalidQuota = errors.New("invalid quota")

// CheckValue validates a quota's value: the byte rates are whole bytes
// per second (Kafka's LONG), request_percentage a positive number.
func CheckValue(key string, v float64) error {
	switch key {
	case ProducerByteRate, ConsumerByteRate:
		if v <= 0 || v != math.Trunc(v) || v >= math.MaxInt64 {
			return fmt.Errorf("%w: %s=%v: a whole number of bytes per second, at least 1", ErrInvalidQuota, key, v)
		}
	case RequestPercentage:
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s=%v: a positive percentage", ErrInvalidQuota, key, v)
		}
	default:
		return fmt.Errorf("%w: unknown quota key %q (the keys are %s, %s and %s)", ErrInvalidQuota, key,
			ProducerByteRate, ConsumerByteRate, RequestPercentage)
	}
	return nil
}
