package quota

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
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

// Entity is what a quota is set for: a user, a client id, or both; or
// a client IP address (KIP-612), never combined with the others.
type Entity struct {
	User, Client, IP Name
}

// ErrInvalidEntity is an entity Kafka would refuse (INVALID_REQUEST).
var ErrInvalidEntity = errors.New("invalid quota entity")

// Validate checks the entity has a component, its names can be znodes
// and an IP entity stands alone with an IP address for its name.
func (e Entity) Validate() error {
	if e.IP.Set {
		if e.User.Set || e.Client.Set {
			return fmt.Errorf("%w: an ip entity cannot be combined with a user or a client id", ErrInvalidEntity)
		}
		if !e.IP.Default {
			if _, err := canonicalIP(e.IP.Value); err != nil {
				return err
			}
		}
		return nil
	}
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

// canonicalIP is v as ferry names an IP entity: the address's own
// spelling (lower-case, shortest IPv6 form, an IPv4-mapped IPv6 address as
// IPv4, as a connection's address is compared), so one address is one
// entity however a request spells it. Host names are refused (Kafka's
// ZooKeeper mode resolved them; its KRaft mode wants an address); so are
// IPv6 zones, which a client address never carries.
func canonicalIP(v string) (string, error) {
	if len(v) > 64 {
		return "", fmt.Errorf("%w: ip %q is not an IP address", ErrInvalidEntity, truncate(v))
	}
	a, err := netip.ParseAddr(v)
	if err != nil || a.Zone() != "" {
		return "", fmt.Errorf("%w: ip %q is not an IP address", ErrInvalidEntity, truncate(v))
	}
	return a.Unmap().String(), nil
}

// Path is the entity's path below /config, as Kafka writes it in
// ZooKeeper and in change notifications: users/<u>, clients/<c>,
// users/<u>/clients/<c>, ips/<ip>.
func (e Entity) Path() string {
	switch {
	case e.IP.Set:
		return "ips/" + e.IP.path()
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
	if e.IP.Set {
		parts = append(parts, "ip '"+e.IP.path()+"'")
	}
	return strings.Join(parts, ", ")
}

// ParsePath reads an entity path (the inverse of Path). An ip's name is
// made canonical, so ips/0:0::1 reads as ips/::1.
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
	case len(parts) == 2 && parts[0] == "ips":
		e.IP = name(parts[1])
		if !e.IP.Default {
			ip, err := canonicalIP(e.IP.Value)
			if err != nil {
				return Entity{}, err
			}
			e.IP.Value = ip
		}
	default:
		return Entity{}, fmt.Errorf("%w: path %q", ErrInvalidEntity, p)
	}
	return e, e.Validate()
}

// Quota types (Kafka's dynamic user, client and ip configs).
const (
	ProducerByteRate  = "producer_byte_rate"
	ConsumerByteRate  = "consumer_byte_rate"
	RequestPercentage = "request_percentage"
	// ConnectionCreationRate is an ip entity's only key (KIP-612): new
	// connections a second from the address.
	ConnectionCreationRate = "connection_creation_rate"
)

// IsQuotaKey reports whether key is a client quota (the other keys of
// /config/users/<u> are SCRAM credentials, which quotas leave alone).
func IsQuotaKey(key string) bool {
	switch key {
	case ProducerByteRate, ConsumerByteRate, RequestPercentage, ConnectionCreationRate:
		return true
	}
	return false
}

// KeyFor reports whether key is a quota an entity of e's kind holds:
// connection_creation_rate for an ip, the others for users and client
// ids, as Kafka's user, client and ip config definitions split them.
func (e Entity) KeyFor(key string) bool {
	if e.IP.Set {
		return key == ConnectionCreationRate
	}
	return IsQuotaKey(key) && key != ConnectionCreationRate
}

// kind names e's kind for error messages.
func (e Entity) kind() string {
	if e.IP.Set {
		return "an ip entity"
	}
	return "a user or client-id entity"
}

// keysFor lists the keys an entity of e's kind holds, for error messages.
func (e Entity) keysFor() string {
	if e.IP.Set {
		return ConnectionCreationRate
	}
	return ProducerByteRate + ", " + ConsumerByteRate + " and " + RequestPercentage
}

// ErrInvalidQuota is a quota key or value Kafka would refuse
// (INVALID_REQUEST).
var ErrInvalidQuota = errors.New("invalid quota")

// CheckValue validates a quota's value: the byte rates are whole bytes
// per second (Kafka's LONG), request_percentage a positive number,
// connection_creation_rate whole connections per second from 0 (Kafka's
// INT, at least 0: 0 refuses every connection) to 2147483647.
func CheckValue(key string, v float64) error {
	switch key {
	case ConnectionCreationRate:
		if !(v >= 0) || v != math.Trunc(v) || v > math.MaxInt32 {
			return fmt.Errorf("%w: %s=%v: a whole number of connections per second, 0 to %d", ErrInvalidQuota, key, v, math.MaxInt32)
		}
	case ProducerByteRate, ConsumerByteRate:
		if v <= 0 || v != math.Trunc(v) || v >= math.MaxInt64 {
			return fmt.Errorf("%w: %s=%v: a whole number of bytes per second, at least 1", ErrInvalidQuota, key, v)
		}
	case RequestPercentage:
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: %s=%v: a positive percentage", ErrInvalidQuota, key, v)
		}
	default:
		return fmt.Errorf("%w: unknown quota key %q (the keys are %s, %s, %s and %s)", ErrInvalidQuota, key,
			ProducerByteRate, ConsumerByteRate, RequestPercentage, ConnectionCreationRate)
	}
	return nil
}
