package main

import (
	"fmt"
	"strings"
)

// jaasEntry is one JAAS login-module entry, the value of Kafka's
// sasl.jaas.config: a module class, its control flag and options, as in
//
//	org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="s3cret";
type jaasEntry struct {
	module, flag string
	options      map[string]string
}

// maxJAASLength bounds a sasl.jaas.config value: a few credentials.
const maxJAASLength = 64 << 10

// parseJAAS reads one entry. Values are bare words or double-quoted with
// backslash escapes, as Kafka's JaasConfig tokenizer reads them.
func parseJAAS(s string) (jaasEntry, error) {
	if len(s) > maxJAASLength {
		return jaasEntry{}, fmt.Errorf("sasl.jaas.config is %d bytes, above %d", len(s), maxJAASLength)
	}
	p := jaasParser{s: s}
	e := jaasEntry{options: map[string]string{}}
	var ok bool
	if e.module, ok = p.word(); !ok {
		return e, fmt.Errorf("sasl.jaas.config: want a login module class first")
	}
	if e.flag, ok = p.word(); !ok {
		return e, fmt.Errorf("sasl.jaas.config: want a control flag (required) after %s", e.module)
	}
	switch strings.ToLower(e.flag) {
	case "required", "requisite", "sufficient", "optional":
	default:
		return e, fmt.Errorf("sasl.jaas.config: control flag %q: want required, requisite, sufficient or optional", e.flag)
	}
	for {
		p.skipSpace()
		if p.done() {
			return e, fmt.Errorf("sasl.jaas.config: the entry must end with ';'")
		}
		if p.s[p.i] == ';' {
			p.i++
			p.skipSpace()
			if !p.done() {
				return e, fmt.Errorf("sasl.jaas.config: one login module entry only, found more after ';'")
			}
			return e, nil
		}
		key, ok := p.word()
		if !ok {
			return e, fmt.Errorf("sasl.jaas.config: want an option name at byte %d", p.i)
		}
		p.skipSpace()
		if p.done() || p.s[p.i] != '=' {
			return e, fmt.Errorf("sasl.jaas.config: option %s: want '='", key)
		}
		p.i++
		p.skipSpace()
		value, err := p.value()
		if err != nil {
			return e, fmt.Errorf("sasl.jaas.config: option %s: %w", key, err)
		}
		if _, dup := e.options[key]; dup {
			return e, fmt.Errorf("sasl.jaas.config: option %s is given twice", key)
		}
		e.options[key] = value
	}
}

type jaasParser struct {
	s string
	i int
}

func (p *jaasParser) done() bool { return p.i >= len(p.s) }

func (p *jaasParser) skipSpace() {
	for !p.done() && strings.ContainsRune(" \t\r\n", rune(p.s[p.i])) {
		p.i++
	}
}

// word is a run of characters that are neither space nor '=', ';' or '"'.
func (p *jaasParser) word() (string, bool) {
	p.skipSpace()
	start := p.i
	for !p.done() && !strings.ContainsRune(" \t\r\n=;\"", rune(p.s[p.i])) {
		p.i++
	}
	return p.s[start:p.i], p.i > start
}

func (p *jaasParser) value() (string, error) {
	if p.done() {
		return "", fmt.Errorf("want a value")
	}
	if p.s[p.i] != '"' {
		if w, ok := p.word(); ok {
			return w, nil
		}
		return "", fmt.Errorf("want a value")
	}
	p.i++
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return b.String(), nil
		case c == '\\' && !p.done():
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("a quoted value is not closed")
}

// jaasKey says whether a properties key is a sasl.jaas.config, and for
// which listener and mechanism: "" for the broker-wide one, else
// "<listener>.<mechanism>" in lower case, as in Kafka's
// listener.name.<listener>.<mechanism>.sasl.jaas.config.
func jaasKey(key string) (scope string, ok bool) {
	if key == "sasl.jaas.config" {
		return "", true
	}
	rest, ok := strings.CutPrefix(key, "listener.name.")
	if !ok {
		return "", false
	}
	scope, ok = strings.CutSuffix(rest, ".sasl.jaas.config")
	if !ok || !strings.Contains(scope, ".") {
		return "", false
	}
	return strings.ToLower(scope), true
}

// fromJAAS fills the broker's own credentials from the sasl.jaas.config
// Kafka would use on the inter-broker listener for its mechanism: the
// listener's own, else the broker-wide one. Settings given as ferry's
// options win. It returns warnings for what ferry does not take from a
// JAAS entry: PLAIN users (user_<name>), since ferry keeps users as SCRAM
// verifiers only, never as passwords in a file.
func (c *interBrokerSASL) fromJAAS(interListener string) ([]string, error) {
	if c.configured() || len(c.jaas) == 0 {
		return nil, nil
	}
	mechanism := c.mechanism
	if mechanism == "" {
		mechanism = "SCRAM-SHA-512"
	}
	key := "listener.name." + strings.ToLower(interListener) + "." + strings.ToLower(mechanism) + ".sasl.jaas.config"
	raw, ok := c.jaas[strings.ToLower(interListener)+"."+strings.ToLower(mechanism)]
	if !ok {
		key = "sasl.jaas.config"
		if raw, ok = c.jaas[""]; !ok {
			return nil, nil
		}
	}
	e, err := parseJAAS(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	wantModule := "ScramLoginModule"
	if mechanism == "PLAIN" {
		wantModule = "PlainLoginModule"
	}
	if !strings.HasSuffix(e.module, "."+wantModule) && e.module != wantModule {
		return nil, fmt.Errorf("%s: %s cannot log in with %s; want org.apache.kafka.common.security.%s.%s",
			key, e.module, mechanism, strings.ToLower(strings.TrimSuffix(wantModule, "LoginModule")), wantModule)
	}
	var warnings []string
	for name := range e.options {
		if user, ok := strings.CutPrefix(name, "user_"); ok {
			warnings = append(warnings, fmt.Sprintf("%s: user_%s is ignored: ferry checks PLAIN against its SCRAM users; create it with `ferry users create %s`", key, user, user))
		}
	}
	user, password := e.options["username"], e.options["password"]
	if user == "" || password == "" {
		if len(warnings) > 0 {
			return warnings, nil // a server-side entry only, with no broker credentials
		}
		return nil, fmt.Errorf("%s: want username and password, the user this broker authenticates to the others as", key)
	}
	c.user, c.password = user, password
	return warnings, nil
}
